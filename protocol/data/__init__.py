"""Versioned data of the protocol (classifiers), shipped as package data."""
