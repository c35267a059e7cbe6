"""Which prior fits one's own data: candidate architectures matched to the data's kind
(:mod:`~biaslab.comparison.candidates`) and one protocol that trains and judges them all alike
(:mod:`~biaslab.comparison.protocol`), for ``biaslab compare``.

The engine, by module:

* what to compare: :mod:`~biaslab.comparison.candidates` (the decision guide), with
  :mod:`~biaslab.comparison.models` and :mod:`~biaslab.comparison.graph_models` (the models and
  their sizes) and :mod:`~biaslab.comparison.user_models` (a user's own model, and the one try of
  every candidate);
* how they are judged: :mod:`~biaslab.comparison.protocol` (the rules, the one door), with
  :mod:`~biaslab.comparison.preparation`, :mod:`~biaslab.comparison.prepared`,
  :mod:`~biaslab.comparison.table_encoding`, :mod:`~biaslab.comparison.graph_data` and
  :mod:`~biaslab.comparison.graph_store` (the data as prepared), :mod:`~biaslab.comparison.fitting`
  (training and reading a candidate) and :mod:`~biaslab.comparison.curves` (learning curves);
* how sure: :mod:`~biaslab.comparison.resampling` (repeated validation splits),
  :mod:`~biaslab.comparison.seeds` (a leaderboard over seeds), :mod:`~biaslab.comparison.importance`
  (permutation importance);
* why a prior fits: :mod:`~biaslab.comparison.probes`, :mod:`~biaslab.comparison.symmetry_probes`
  and :mod:`~biaslab.comparison.symmetry_report` (the data's own symmetries);
* what it concluded: :mod:`~biaslab.comparison.judged` (verdicts, the leaderboard, the
  recommendation);
* a study as tasks: :mod:`~biaslab.comparison.study_fits` (``compare``) and
  :mod:`~biaslab.comparison.qm9_fits` with :mod:`~biaslab.comparison.qm9` (the QM9 benchmark);
* afterwards: :mod:`~biaslab.comparison.saving` (models without pickle) and
  :mod:`~biaslab.comparison.study` (a finished comparison that predicts new data).
"""
