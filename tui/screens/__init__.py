"""Modal screens of the Textual app: approval, summary, context breakdown, session picker."""
