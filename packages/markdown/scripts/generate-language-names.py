"""python3 packages/markdown/scripts/generate-language-names.py: builds the table of code-block
languages (src/generated/code-language-names.json) from Pygments, the library Zulip renders
code blocks with: each lexer alias, lowercased, to the lexer's display name, which Zulip puts
in data-code-language (fenced_code.py's format_code: find_lexer_class_by_name(lang).name).
Needs Pygments (Debian's python3-pygments); the table is committed, so nothing runs it at
install time."""

import json
import os

import pygments
from pygments.lexers import get_all_lexers

names = {}
for name, aliases, _filenames, _mimetypes in get_all_lexers():
    for alias in aliases:
        # find_lexer_class_by_name matches the first lexer with the alias, in this order.
        names.setdefault(alias.lower(), name)

out = os.path.join(os.path.dirname(__file__), "..", "src", "generated", "code-language-names.json")
with open(out, "w") as f:
    json.dump({"pygments": pygments.__version__, "names": dict(sorted(names.items()))}, f, indent=2, ensure_ascii=False)
    f.write("\n")
print(f"{len(names)} aliases from Pygments {pygments.__version__} written to {os.path.normpath(out)}")
