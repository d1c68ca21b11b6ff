"""Jinja2 templates for generated modules and reports; shipped inside the wheel as harvest.templates."""
