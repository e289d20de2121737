"""kda_prefill's docstring documents every parameter it takes, in the Args/Returns/Raises/Example
layout of fla's chunk_kda (STYLE.md section 5)."""
import inspect
import re

from kda_tile import api


def _args_section(doc):
    m = re.search(r"\n    Args:\n(.*?)\n\n    Returns:", doc, re.S)
    assert m, "no Args section ending before Returns"
    return m.group(1)


def test_every_parameter_is_documented():
    doc = api.kda_prefill.__doc__
    for section in ("Args:", "Returns:", "Raises:", "Example:"):
        assert f"\n    {section}\n" in doc, section
    documented = set()
    for line in _args_section(doc).splitlines():
        m = re.match(r"        ([A-Za-z_]+(?:, [A-Za-z_]+)*):", line)
        if m:
            documented.update(m.group(1).split(", "))
    params = set(inspect.signature(api.kda_prefill).parameters)
    assert documented == params, (params - documented, documented - params)


def test_the_eager_path_takes_the_same_parameters():
    assert inspect.signature(api.kda_prefill_eager).parameters.keys() == \
        inspect.signature(api.kda_prefill).parameters.keys()
