"""Cloud Functions source entry: ``functions-framework --source main.py --target translate_http`` (or
``--target translate_storage_event``, ``--target translate_part_event``). Everything lives in
``handler.adapters.gcp``."""

from handler.adapters.gcp import translate_http, translate_part_event, translate_storage_event

__all__ = ["translate_http", "translate_storage_event", "translate_part_event"]
