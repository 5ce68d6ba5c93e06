"""The SOP studio's "Simulated customers" tab, driven by AppTest: run personas, see pass^k, save a failing run
as a conversation test of the workspace."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from streamlit.testing.v1 import AppTest

from tests.ui.conftest import APP, texts


def test_a_failing_simulated_run_is_saved_as_a_test(app_ws: Path) -> None:
    sop_file = app_ws / "sops" / "order_status.json"
    sop = json.loads(sop_file.read_text(encoding="utf-8"))
    for node in ("tell_eta", "tell_status"):  # a typo in a field name: the reply shows it unfilled
        text = sop["nodes"][node]["messageTemplate"]
        sop["nodes"][node]["messageTemplate"] = text.replace("context.order.items", "context.order.item_list")
    sop_file.write_text(json.dumps(sop), encoding="utf-8")
    at = AppTest.from_file(APP, default_timeout=120)  # the app opens the workspace with the typo in it
    at.run()
    at.switch_page("pages/studio.py").run()
    at.selectbox(key="sim_sop").set_value("support.order_status").run()
    at.number_input(key="sim_k").set_value(2).run()
    at.multiselect(key="sim_manners").set_value(["terse", "up_front"]).run()
    at.button(key="sim_run").click().run()
    assert not at.exception, at.exception
    page = texts(at)
    assert "{context.order.item_list}" in page and "Failing runs (4)" in page
    rows = at.dataframe[-1].value
    assert list(rows["persona"]) == ["terse/support.order_status", "up_front/support.order_status"]
    assert list(rows["pass^2"]) == ["no", "no"]
    at.button(key="sim_save_0").click().run()
    assert not at.exception, at.exception
    saved = app_ws / "conversations" / "simulated_terse_support_order_status_run_1.yaml"
    assert saved.is_file() and any("Saved `conversations/" in s.value for s in at.success)
    spec = yaml.safe_load(saved.read_text(encoding="utf-8"))
    assert spec["turns"][0]["user"] == "where is my order"
    assert "orders.get_status" in json.dumps(spec["turns"])  # the run's scripted world is in the test
