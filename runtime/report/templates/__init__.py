"""Jinja2 templates and CSS of the audit report (a package so that setuptools ships them)."""
