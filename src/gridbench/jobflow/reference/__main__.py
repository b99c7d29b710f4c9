"""``python -m gridbench.jobflow.reference --config FILE --port N``."""

from gridbench.jobflow.reference.server import main

raise SystemExit(main())
