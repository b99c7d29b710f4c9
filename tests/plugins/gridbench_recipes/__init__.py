"""Throw-away extensions made from outside gridbench's source tree, as the recipes of
docs/architecture.md say: a stamp-source kind (:mod:`.stamp_kind`) and a model step kind
(:mod:`.model_step`). Each registers itself when imported; the tests that use them
(tests/jobflow/test_recipe_stamp_kind.py, tests/model/test_recipe_model_step.py) import
them into a registry of their own."""
