.PHONY: install test chat lint bench

install:
	python -m pip install torch==2.13.0
	python -m pip install -r requirements.txt

test:
	python -m pytest -q

chat:
	python -m core chat --trace

lint:
	python -m core lint

bench:
	python -m core bench
