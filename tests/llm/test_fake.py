"""The fake LLM: scripted answers, counted requests, failures on demand, cached like the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from chunkmark.errors import LLMError, SpecError
from chunkmark.llm import LLM, EmptyAnswerError, FakeLLM, build_llm


def test_answers_in_order_then_the_last_repeats() -> None:
    llm = build_llm("fake(answers=['one', 'two'])")
    assert [llm.complete("s", f"u{i}") for i in range(4)] == ["one", "two", "two", "two"]
    assert llm.stats().requests == 4 and llm.stats().calls == 4
    assert isinstance(llm, LLM) and isinstance(llm, FakeLLM)
    assert [p[1] for p in llm.prompts] == ["u0", "u1", "u2", "u3"]


def test_callable_answers_see_the_prompts() -> None:
    llm = FakeLLM(lambda system, user: f"{system}|{user.upper()}")
    assert llm.complete("sys", "hello", max_tokens=9) == "sys|HELLO"
    assert llm.prompts == [("sys", "hello", 9)]


def test_default_answer_is_deterministic() -> None:
    a, b = FakeLLM(), FakeLLM()
    assert a.complete("s", "u") == b.complete("s", "u")
    assert a.complete("s", "u") != a.complete("s", "v")


def test_fail_after() -> None:
    llm = build_llm("fake(answers=['ok'], fail_after=1)")
    assert llm.complete("s", "u") == "ok"
    with pytest.raises(LLMError, match="scripted to fail after 1"):
        llm.complete("s", "v")


def test_cache_answers_reruns_and_separates_scripts(tmp_path: Path) -> None:
    first = build_llm("fake(answers=['cached'])", cache_dir=tmp_path)
    assert first.complete("s", "u") == "cached"
    rerun = build_llm("fake(answers=['cached'])", cache_dir=tmp_path)
    assert rerun.complete("s", "u") == "cached"
    assert rerun.stats().requests == 0 and rerun.stats().cache_hits == 1
    other = build_llm("fake(answers=['different'])", cache_dir=tmp_path)
    assert other.complete("s", "u") == "different"
    other_seed = build_llm("fake(answers=['cached'])", cache_dir=tmp_path, seed=5)
    other_seed.complete("s", "u")
    assert other_seed.stats().requests == 1


def test_bad_parameters() -> None:
    with pytest.raises(SpecError, match="fail_after"):
        build_llm("fake(fail_after=-1)")
    with pytest.raises(SpecError, match="Unknown llm"):
        build_llm("gpt(model='x')")
    with pytest.raises(ValueError, match="max_tokens"):
        FakeLLM().complete("s", "u", max_tokens=0)


def test_empty_answer_is_an_error_and_not_cached(tmp_path: Path) -> None:
    llm = FakeLLM(["", "later"], cache_dir=tmp_path)
    with pytest.raises(EmptyAnswerError, match="empty answer"):
        llm.complete("s", "u")
    assert llm.complete("s", "u") == "later"
    assert llm.stats().empty_answers == 1 and llm.stats().requests == 2
