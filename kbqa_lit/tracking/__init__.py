"""Reading logged training runs back and comparing them (``kbqa compare``).

- :mod:`.runs`: :class:`RunRecord` (hyper-parameters, metric histories, final values) and config flattening;
- :mod:`.csv_runs`: Lightning ``CSVLogger`` directories (``metrics.csv``, ``hparams.yaml``, ``config.yaml``);
- :mod:`.wandb_runs`: W&B run directories (``run-<id>.wandb``), offline or synced, read with wandb's own reader;
- :mod:`.discover`: find the runs under the paths given on the command line;
- :mod:`.lineage`: join each ``kbqa test``/``validate`` run to the fit run it evaluated (checkpoint, else config);
- :mod:`.comparison`: the table of final metrics, the hyper-parameters that differ, sweep tables, experiments;
- :mod:`.svg`: line and bar charts as inline SVG; :mod:`.report` (with :mod:`.report_experiments`): the
  self-contained HTML report; :mod:`.png`: ``learning_curves.png`` and ``groups.png`` with matplotlib.

Nothing here needs the network.
"""
