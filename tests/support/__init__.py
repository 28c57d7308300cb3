"""Helpers the tests share (servers, deployments, fixtures in the real layouts that only tests
use)."""
