.PHONY: install run test chat lint bench e2e

install:
	python -m pip install torch==2.13.0
	python -m pip install -r requirements.txt

run:
	streamlit run app.py

test:
	python -m pytest -q

e2e:
	python -m pytest -q tests/ui/test_e2e.py

chat:
	python -m core chat --trace

lint:
	python -m core lint

bench:
	python -m core bench
