"""``python -m gridbench.reference --config FILE --port N``."""

from gridbench.reference.server import main

raise SystemExit(main())
