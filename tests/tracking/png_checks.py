"""Checks that a PNG file is a real picture: the signature, its size, and how many colours it uses."""

from __future__ import annotations

import struct
from pathlib import Path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """Width and height from the IHDR chunk (asserting the PNG signature)."""
    head = path.read_bytes()[:24]
    assert head[:8] == PNG_SIGNATURE and head[12:16] == b"IHDR", f"{path} is not a PNG file"
    return struct.unpack(">II", head[16:24])


def colour_stats(path: Path) -> tuple[int, float]:
    """The number of distinct colours (of a 4-level-per-channel quantisation) and the share of non-white pixels."""
    from PIL import Image  # pillow comes with matplotlib

    with Image.open(path) as image:
        data = image.convert("RGB").tobytes()
    pixels = [tuple(data[i : i + 3]) for i in range(0, len(data), 3)]
    colours = {(r >> 6, g >> 6, b >> 6) for r, g, b in pixels}
    non_white = sum(1 for r, g, b in pixels if min(r, g, b) < 235) / max(len(pixels), 1)
    return len(colours), non_white
