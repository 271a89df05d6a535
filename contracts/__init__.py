"""The shared vocabulary: pydantic models, enums, pure policy rules and constants. No I/O."""
