.PHONY: demo test bench
demo:  ## set up and run the demo benchmark against the embedded reference grid
	scripts/demo
test:  ## set up and run the full test suite (ruff, mypy, lint-imports, pytest)
	scripts/test
bench: ## performance benchmarks (print figures)
	scripts/setup
	.venv/bin/python bench/bench_open_loop.py
	.venv/bin/python bench/bench_inflight.py
	.venv/bin/python bench/bench_analysis.py
