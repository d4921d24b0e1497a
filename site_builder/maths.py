"""Markdown to HTML with the maths typeset at build time, as MathML (no script, no font).

nbconvert's Markdown renderer leaves `$...$` and `$$...$$` in the page for MathJax, which the
stock templates load from a CDN. Here the same parser hands each formula to latex2mathml,
and the page carries MathML, which browsers draw natively (Chromium 109+, Firefox, Safari):
nothing to fetch, nothing to run, readable offline and from disk.

    html = markdown_to_html(source)             # one Markdown text
    MathMLRenderer(...)                         # the renderer, for nbconvert's exporter
    problems                                    # formulas that could not be converted
"""

from __future__ import annotations

import html
import re

from latex2mathml.converter import convert
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

# Operators latex2mathml does not know, spelled with \operatorname, which it does.
_OPERATORS = re.compile(r"\\(arg|argmax|argmin)\b")
_UNKNOWN = re.compile(r">[^<]*\\[A-Za-z]+[^<]*<")  # a TeX command left in MathML text
_XMLNS = ' xmlns="http://www.w3.org/1998/Math/MathML"'  # implied for <math> in HTML

problems: list[str] = []
"""Formulas that did not convert cleanly (their TeX is shown as code instead); the build
reports them."""


def tex_to_mathml(tex: str, display: bool) -> str:
    """One formula as a <math> element; on failure its TeX source in <code class="tex">."""
    fixed = _OPERATORS.sub(r"\\operatorname{\1}", tex)
    try:
        out = convert(fixed.strip(), display="block" if display else "inline")
    except Exception as exc:  # noqa: BLE001 - any parser error: show the source instead
        problems.append(f"{tex!r}: {type(exc).__name__}: {exc}")
        return f'<code class="tex">{html.escape(tex)}</code>'
    if _UNKNOWN.search(out):
        problems.append(f"{tex!r}: unknown command in {_UNKNOWN.search(out).group(0)}")
    return out.replace(_XMLNS, "")


class MathMLRenderer(IPythonRenderer):
    """nbconvert's Markdown renderer with every formula converted to MathML."""

    def block_math(self, body: str) -> str:
        return tex_to_mathml(body, display=True)

    def latex_environment(self, name: str, body: str) -> str:
        return tex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

    def inline_math(self, body: str) -> str:
        return tex_to_mathml(body, display=False)


def markdown_to_html(source: str, **renderer_options) -> str:
    """Render Markdown (tables, code, raw HTML, maths) to HTML with MathML formulas."""
    renderer = MathMLRenderer(escape=False, **renderer_options)
    return MarkdownWithMath(renderer=renderer).render(source)
