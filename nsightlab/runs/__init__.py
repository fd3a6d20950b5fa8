"""The run store (every run a folder: raw outputs, meta.json, result.json), listing and
removing runs, and offline `analyze` of files the user already has."""
