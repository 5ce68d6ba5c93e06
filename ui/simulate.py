"""The SOP studio's "Simulated customers" tab: run personas against the SOPs, see pass^k, save a failing run
as a conversation test. Reads widgets, calls the playground service, renders; the work is in core."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.evaluation.personas import MANNERS
from core.evaluation.sim_report import CHECK_TITLES, CHECKS, SimulationReport
from core.playground.service import Playground
from core.shared.errors import UserInputError
from ui import widgets

REPORT = "sim_report"  # {"root": workspace, "report": SimulationReport}
ALL = "All SOPs"


def tab(pg: Playground) -> None:
    """The tab's form, the last report of this workspace, and its failing runs."""
    st.caption("Simulated customers try the SOPs before real ones do. Each persona is a goal (an SOP and the values "
               "the customer knows, taken from the SOP's hints, slot types and the store's data) and a manner; it "
               "plays the customer k times. A run passes when the SOP started, ran the goal's steps to its end, "
               "called the tools with the customer's values, stayed on the request, and never looped. A language "
               "model set in the chat settings plays the customers and judges politeness; without one, rules do.")
    sops = [s.id for s in pg.workspace.sops]
    c1, c2, c3 = st.columns([2, 1, 1])
    sop = c1.selectbox("SOP", [ALL, *sops], key="sim_sop")
    k = int(c2.number_input("Runs per persona (k)", min_value=1, max_value=20, value=3, key="sim_k"))
    seed = int(c3.number_input("Seed", value=7, step=1, key="sim_seed"))
    manners = st.multiselect("Personas", list(MANNERS), default=list(MANNERS), key="sim_manners",
                             format_func=lambda m: f"{m.replace('_', ' ')}: {MANNERS[m]}")
    if st.button("Run simulated customers", type="primary", icon=":material/groups:", key="sim_run",
                 disabled=not manners):
        bar = st.progress(0.0, text="starting")
        try:
            report = pg.runs.simulate(sops=None if sop == ALL else [sop], manners=manners, k=k, seed=seed,
                                 progress=lambda f, s: bar.progress(f, text=s))
            st.session_state[REPORT] = {"root": str(pg.root), "report": report}
        except UserInputError as exc:
            st.error(str(exc), icon=":material/error:")
    kept = st.session_state.get(REPORT)
    if kept and kept["root"] == str(pg.root):
        show(pg, kept["report"])


def show(pg: Playground, report: SimulationReport) -> None:
    """pass^k and pass@1, one row per persona, then each failing run with its conversation and a save."""
    d = report.to_dict()
    m1, m2, m3 = st.columns(3)
    m1.metric(f"pass^{d['k']}", f"{d['pass_k']:.0%}", help="Personas whose k runs all pass.")
    m2.metric("pass@1", f"{d['pass_at_1']:.0%}", help="Runs that pass.")
    m3.metric("Runs", d["runs"])
    who = d["customer"]
    st.caption("Customers played by " + ("rules (offline; the same seed gives the same report)" if who["by"] == "rules"
               else f"{who['model']} with prompt {who['prompt_version']} (sha256 {who['prompt_sha256']})")
               + f" · {d['seconds']} s")
    rows = [{"persona": p["name"], f"pass^{d['k']}": "yes" if p["pass_k"] else "no", "pass@1": p["pass_at_1"],
             "passed": f"{p['passed']}/{p['runs']}", "mean turns": p["mean_turns"],
             **({"soft (judge)": f"{p['soft_passed']}/{p['runs']}"} if "soft_passed" in p else {})}
            for p in d["personas"]]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for note in d["notes"]:
        st.caption(f"Not simulated: {note}")
    failing = report.failing()
    if not failing:
        st.success("Every run passed.", icon=":material/check_circle:")
        return
    st.markdown(f"**Failing runs ({len(failing)})**: save one as a conversation test to keep it.")
    for i, run in enumerate(failing):
        failed = ", ".join(CHECK_TITLES[c] for c in CHECKS if not run.checks.get(c, True))
        with st.expander(f"{run.persona} · run {run.trial} · failed: {failed}", expanded=i == 0):
            for problem in run.problems:
                st.markdown(f"- {problem}")
            for user, reply in run.turns:
                st.markdown(f"**Customer:** {widgets.user_text(user)}")
                st.markdown(f"**Agent:** {widgets.user_text(reply)}")
            name = st.text_input("Test name", value=f"simulated {run.persona} run {run.trial}",
                                 key=f"sim_name_{i}")
            if st.button("Save as test", icon=":material/playlist_add_check:", key=f"sim_save_{i}"):
                widgets.saved_test(lambda run=run, name=name: pg.runs.save_traces_as_test(
                    run.traces, name, customer_id=run.customer_id or "", scripted=run.scripted))

