"""Reading logged training runs back and comparing them (``kbqa compare``).

- :mod:`.runs`: :class:`RunRecord` (hyper-parameters, metric histories, final values) and config flattening;
- :mod:`.csv_runs`: Lightning ``CSVLogger`` directories (``metrics.csv``, ``hparams.yaml``, ``config.yaml``);
- :mod:`.wandb_runs`: W&B run directories (``run-<id>.wandb``), offline or synced, read with wandb's own reader;
- :mod:`.discover`: find the runs under the paths given on the command line;
- :mod:`.lineage`: join each ``kbqa test``/``validate`` run to the fit run it evaluated (checkpoint, else config);
- :mod:`.comparison`: the table of final metrics, the hyper-parameters that differ, sweep tables, experiments;
- :mod:`.rows`: ``--rows KEY,...``: one table row per run keyed by run parameters (system × form);
  :mod:`.table_text`: that table (or one row per run) on the terminal and as Markdown;
- :mod:`.plotting` (matplotlib, the ``plots`` extra), :mod:`.charts`: line and bar charts drawn by
  matplotlib, inlined as SVG; :mod:`.report` (with :mod:`.report_table`, :mod:`.report_experiments`): the
  self-contained HTML report; :mod:`.png`: ``learning_curves.png``, ``groups.png``, ``comparison.png``.

Nothing here needs the network.
"""
