"""The learner's own record of every check: what was tried, what passed, which mistake was named.

Every checker verdict appends one line of JSON to `records.jsonl` in the learner's course
folder, `~/.attention-course/` unless the environment variable ATTENTION_COURSE_RECORDS names
another folder ("off" records nothing):

    {"exercise": "check_attention", "lesson": "04_scaled_dot_product", "outcome": "mistake",
     "message": "you divided by d_k = 8 itself; divide by its square root",
     "time": "2026-11-27T08:00:00Z"}

outcome is "passed", "mistake" (a known misconception, named by the checker's table of
mistakes), "wrong" (any other "Not yet") or "not attempted" (the stub still raises
NotImplementedError). Nothing leaves the folder unless a teacher collects it
(`python -m attention.exercises.class_report`). Writing never breaks a check: a folder that
cannot be written gets one note per kernel and the verdict is printed as always.

`progress()` prints the learner's own table: per lesson, the exercises tried and passed, and
the ones still open with their last verdict (`from attention.exercises.records import
progress`). A damaged or missing file, or a damaged line, is reported in one clear line, never a
crash.
"""

from __future__ import annotations

import json
import os
import time
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..language import translate

__all__ = [
    "EXERCISE_LESSON",
    "OUTCOMES",
    "RECORDS_ENV",
    "Record",
    "progress",
    "read_records",
    "record",
    "records_file",
]

RECORDS_ENV = "ATTENTION_COURSE_RECORDS"
FILE_NAME = "records.jsonl"
OUTCOMES = ("passed", "mistake", "wrong", "not attempted")
MAX_MESSAGE = 500  # characters of a verdict kept in a record

# Each checker and the lesson that uses it (tests/test_records.py checks it against the checker
# modules and lessons/); a checker missing here is still recorded, with lesson None.
EXERCISE_LESSON: dict[str, str] = {
    **dict.fromkeys(["check_vocabulary", "check_rnn_final_state"], "01_why_attention"),
    **dict.fromkeys(["check_softmax", "check_gaussian_pooling"], "02_weighted_averaging"),
    **dict.fromkeys(["check_additive_scores", "check_bilinear_scores"], "03_scoring_functions"),
    **dict.fromkeys(["check_attention", "check_attention_shapes"], "04_scaled_dot_product"),
    **dict.fromkeys(["check_dot_product_variance", "check_softmax_jacobian"], "05_why_sqrt_dk"),
    **dict.fromkeys(
        ["check_causal_mask", "check_key_padding_mask", "check_masked_softmax"], "06_masks"
    ),
    **dict.fromkeys(
        [
            "check_attention_pool",
            "check_self_attention",
            "check_memory_slots",
            "check_tanh_attention",
        ],
        "07_self_attention",
    ),
    **dict.fromkeys(
        ["check_split_heads", "check_multi_head_scores", "check_mha_parameter_count"],
        "08_multi_head",
    ),
    **dict.fromkeys(
        ["check_positional_encoding", "check_permutation_equivariance"], "09_positional_encoding"
    ),
    **dict.fromkeys(["check_layer_norm", "check_parameter_count"], "10_transformer_block"),
    **dict.fromkeys(
        ["check_shift_right", "check_sequence_loss", "check_greedy_step"], "11_encoder_decoder"
    ),
    **dict.fromkeys(
        [
            "check_sink_share",
            "check_previous_token_score",
            "check_induction_score",
            "check_top_k_filter",
            "check_sampling_probs",
            "check_chat_prompt",
        ],
        "12_real_model_attention",
    ),
    **dict.fromkeys(
        [
            "check_attention_matrix_bytes",
            "check_online_softmax_update",
            "check_flash_tile_update",
        ],
        "13_flash_attention",
    ),
    **dict.fromkeys(
        ["check_kv_cache_bytes", "check_cached_attention", "check_repeat_kv"], "14_kv_cache_gqa"
    ),
    **dict.fromkeys(
        ["check_rope_half", "check_alibi_bias", "check_sliding_window_mask", "check_perplexity"],
        "15_rope_alibi_windows",
    ),
    **dict.fromkeys(
        [
            "check_rms_norm",
            "check_rope_interleaved",
            "check_gqa_attention",
            "check_cached_causal_mask",
            "check_attention_layer",
            "check_swiglu",
            "check_decoder_block",
            "check_output_layer",
            "check_generate",
        ],
        "16_your_own_smollm2",
    ),
    **dict.fromkeys(
        [
            "check_batch_previous_token_score",
            "check_toy_induction_score",
            "check_ablate_head",
            "check_k_composition",
            "check_repeated_loss",
        ],
        "17_induction_heads",
    ),
    **dict.fromkeys(
        [
            "check_rollout",
            "check_patching_effect",
            "check_occlusion",
            "check_read_head",
            "check_mean_ablate",
            "check_patch_head",
        ],
        "18_intervention_lab",
    ),
    **dict.fromkeys(
        [
            "check_mla_cache_bytes",
            "check_linear_attention_step",
            "check_topk_keep",
            "check_differential_weights",
            "check_paged_slot",
            "check_mla_absorbed_scores",
            "check_differential_map",
            "check_gated_delta_step",
        ],
        "19_attention_after_2024",
    ),
    **dict.fromkeys(
        [
            "check_document_mask_mod",
            "check_window_sinks_mask_mod",
            "check_alibi_score_mod",
            "check_softcap_score_mod",
        ],
        "20_masks_you_write",
    ),
}


@dataclass(frozen=True)
class Record:
    """One checker verdict."""

    exercise: str  # the checker's name, e.g. "check_attention"
    outcome: str  # one of OUTCOMES
    message: str  # the verdict as printed, without "Correct: " / "Not yet: "
    time: str  # UTC, ISO 8601 ("2026-11-27T08:00:00Z")
    lesson: str | None = None  # "04_scaled_dot_product"; None for a checker outside the course


def records_file() -> Path | None:
    """Where this learner's records go: $ATTENTION_COURSE_RECORDS/records.jsonl, by default
    ~/.attention-course/records.jsonl; None when the variable is "off"."""
    folder = os.environ.get(RECORDS_ENV, "").strip()
    if folder.lower() == "off":
        return None
    return Path(folder or Path.home() / ".attention-course").expanduser() / FILE_NAME


_warned: list[str] = []  # a note per kernel, not one per check


def record(exercise: str, outcome: str, message: str) -> None:
    """Append one verdict to the learner's records; never raises (a note instead, once)."""
    try:
        path = records_file()
        if path is None:
            return
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome: expected one of {OUTCOMES}, got {outcome!r}")
        line = json.dumps(
            {
                "exercise": exercise,
                "lesson": EXERCISE_LESSON.get(exercise),
                "outcome": outcome,
                "message": message[:MAX_MESSAGE],
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            ensure_ascii=False,
        )
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # one write of one line in append mode: two kernels writing at once do not interleave
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except Exception as exc:  # noqa: BLE001 - a record is a convenience, the verdict is not
        if not _warned:
            _warned.append(str(exc))
            print(
                translate(
                    f"(your progress was not saved: {type(exc).__name__}: {exc}; set "
                    f"{RECORDS_ENV} to a folder you can write, or to off)"
                )
            )


def _parse(line: str) -> Record:
    """One line of a records file -> Record; ValueError saying what is wrong with it."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    fields = {"exercise": str, "outcome": str, "message": str, "time": str}
    for name, kind in fields.items():
        if not isinstance(data.get(name), kind):
            got = type(data[name]).__name__ if name in data else "nothing"
            raise ValueError(f"{name}: expected a string, got {got}")
    if data["outcome"] not in OUTCOMES:
        raise ValueError(f"outcome: expected one of {', '.join(OUTCOMES)}, got {data['outcome']!r}")
    lesson = data.get("lesson")
    if lesson is not None and not isinstance(lesson, str):
        raise ValueError(f"lesson: expected a string or null, got {type(lesson).__name__}")
    return Record(data["exercise"], data["outcome"], data["message"], data["time"], lesson)


def read_records(path: str | os.PathLike[str]) -> tuple[list[Record], list[str]]:
    """Every record of a file, and one line per problem (missing, unreadable, damaged lines).

    A damaged line is skipped and named ("records.jsonl line 3: not JSON ..."); the others
    are read. Never raises for what is in or around the file.
    """
    path = Path(path)
    try:
        if not path.exists():
            return [], [f"{path}: no records yet (the file does not exist)"]
        if not path.is_file():
            return [], [f"{path}: expected a file of records, got a folder or another kind of file"]
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:  # a folder we may not enter, a file we may not read
        return [], [f"{path}: cannot be read ({exc.strerror or exc}); no records taken from it"]
    records, problems = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(_parse(line))
        except ValueError as exc:
            problems.append(f"{path} line {number}: {exc}; line skipped")
    return records, problems


def _lesson_order(lesson: str | None) -> tuple[int, str]:
    return (0, lesson) if lesson else (1, "")


def _pad(text: str, width: int, *, right: bool = False) -> str:
    """text padded to `width` columns as a terminal shows them (a CJK character takes two)."""
    shown = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    fill = " " * max(0, width - shown)
    return fill + text if right else text + fill


def progress_lines(records: Iterable[Record]) -> Iterator[str]:
    """The lines `progress` prints for these records, in the chosen language (translate)."""
    last: dict[str, Record] = {}  # exercise -> its latest attempt (not "not attempted")
    passed: set[str] = set()
    for r in records:
        if r.outcome == "not attempted":
            continue
        last[r.exercise] = r
        if r.outcome == "passed":
            passed.add(r.exercise)
    lessons = sorted({r.lesson for r in last.values()}, key=_lesson_order)
    if not lessons:
        yield translate(
            "No exercise tried yet: write a function in a lesson and run its check cell."
        )
        return
    yield " ".join(
        (
            _pad(translate("lesson"), 28),
            _pad(translate("tried"), 5, right=True),
            _pad(translate("passed"), 6, right=True),
            _pad(translate("of"), 3, right=True),
        )
    )
    for lesson in lessons:
        tried = [e for e, r in last.items() if r.lesson == lesson]
        total = sum(1 for v in EXERCISE_LESSON.values() if v == lesson) if lesson else len(tried)
        done = sum(e in passed for e in tried)
        name = _pad(lesson or translate("outside the lessons"), 28)
        yield f"{name} {len(tried):>5} {done:>6} {total:>3}"
        for exercise in tried:
            if exercise not in passed:
                # the record keeps the English verdict; it is shown in the chosen language
                message = translate(last[exercise].message)[:100]
                yield f"    {translate('not passed yet:')} {exercise}: {message}"


def progress(path: str | os.PathLike[str] | None = None) -> None:
    """Print your progress: per lesson, the exercises tried and passed, and those still open.

    Args:
        path: a records file; by default yours (see records_file).
    """
    if path is None:
        path = records_file()
        if path is None:
            print(translate(f"Records are off ({RECORDS_ENV}=off): no progress to show."))
            return
    records, problems = read_records(path)
    for problem in problems:
        print(translate(problem))
    for line in progress_lines(records):
        print(line)
