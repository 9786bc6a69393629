"""Secrets and personal data replaced with typed placeholders before anything is stored."""
