"""Hugging Face integrations for ember.train (Ray Train's `ray.train.huggingface` names)."""
