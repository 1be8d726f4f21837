"""The report: charts, the index page, and the speed measurements' helpers."""
