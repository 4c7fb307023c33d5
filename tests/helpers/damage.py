"""Damage files the way a crash, a half copy or a bad disk does (issue 31, scenario 4 tests)."""

from __future__ import annotations

import io
import struct
import zipfile


def torch_zip_byte_changed(data: bytes) -> bytes:
    """``data`` (a ``torch.save`` zip) with the first byte of its first tensor storage changed.

    The archive stays readable and ``torch.load`` loads it: one value differs.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = next(i for i in archive.infolist() if "/data/" in i.filename)
    name_len, extra_len = struct.unpack("<HH", data[info.header_offset + 26 : info.header_offset + 30])
    at = info.header_offset + 30 + name_len + extra_len
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]
