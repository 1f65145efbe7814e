"""Recipes: prepare, train, evaluate and report, shared by `zoo/<model>/`."""
