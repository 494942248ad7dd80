#!/usr/bin/env python3
"""Prints a YAML file as JSON (PyYAML's safe loader), for tests that check docker-compose.yml."""

import json
import sys

import yaml

with open(sys.argv[1], encoding="utf-8") as f:
    json.dump(yaml.safe_load(f), sys.stdout, ensure_ascii=False)
