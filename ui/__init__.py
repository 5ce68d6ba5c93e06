"""Streamlit helpers shared by the pages: cached services, the workspace picker, common renderers."""
