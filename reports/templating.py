"""The one jinja2 environment of the report pages: templates from ``reports/templates``,
HTML autoescaped (every value a record carries is hostile until escaped)."""
from __future__ import annotations

import jinja2

ENV = jinja2.Environment(loader=jinja2.PackageLoader("reports", "templates"),
                         autoescape=jinja2.select_autoescape(["html", "j2"]))
