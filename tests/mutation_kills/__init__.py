"""Tests written to kill the mutants ``make mutation`` found surviving: each asserts a behaviour a user relies on."""
