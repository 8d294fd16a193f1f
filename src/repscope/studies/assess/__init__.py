"""Assess your own model: one call that puts a model trained anywhere through every repscope assessment
that fits its role (encoder, classifier, generator, multimodal).

- :mod:`repscope.studies.assess.assessment`: the :class:`Assessment` every role returns.
- :mod:`repscope.studies.assess.encoder`, :mod:`~repscope.studies.assess.classifier`,
  :mod:`~repscope.studies.assess.generator`, :mod:`~repscope.studies.assess.multimodal`: each role's
  compute step, on objects with the role's methods (``encode``, ``decode``, ``soft_labels``, ``sample``).
- :mod:`repscope.studies.assess.api`: :func:`assess`, which loads the model, checks it, picks the role
  and runs its assessments.
"""
