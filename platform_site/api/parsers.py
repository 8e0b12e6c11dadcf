"""Request body parsers."""

from rest_framework import exceptions, parsers


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with a body nested too deeply for Python's decoder (`[[[[...]]]]` thousands deep)
    answered as malformed (400), like any other JSON it cannot read, instead of a RecursionError (500)."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON parse error - the body is nested too deeply.") from None
