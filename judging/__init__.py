"""LLM judges on the Django side: configurations, runs, batches, estimates, judge-vs-experts."""
