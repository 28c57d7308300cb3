"""lighteval details files in the usual shapes, reduced with Arrow kernels (no per-row Python).

Each file's columns become the few uniform columns of ``UNIFORM`` (``uniform_table``); the files
of a task are concatenated and computed on together (``from_uniform``): a tree of hundreds of
small files costs a few Arrow kernels per task, not a few per file. A file in other shapes raises
``SlowPath`` and is read row by row (``forgetmap.importers.lighteval.rows``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from forgetmap.core.columns import first_items, first_max_positions, one_array, one_item_lists
from forgetmap.core.prompt_templates import StoredPrompts, stored_prompts
from forgetmap.core.sample_identity import Questions, unit_questions
from forgetmap.importers.common import binary_column, choices_json_column, logprob_lists_json
from forgetmap.importers.lighteval.files import EXTRACTED
from forgetmap.importers.lighteval.rows import DEFAULT_METRICS, FILE_COLUMNS
from forgetmap.importers.lighteval.status import cut_counts, status_column

STRING_LISTS = pa.list_(pa.string())
UNIFORM = pa.schema(
    [
        ("doc_id", pa.string()),
        ("query", pa.string()),
        ("prompt", pa.string()),
        ("texts", STRING_LISTS),
        ("post", STRING_LISTS),
        ("extracted", STRING_LISTS),
        ("choices", STRING_LISTS),
        ("first_gold", pa.int64()),
        ("n_gold", pa.int64()),
        ("gold_texts", STRING_LISTS),
        ("correct", pa.bool_()),
        # the answer's status (``forgetmap.importers.lighteval.status``; null: not said)
        ("status", pa.string()),
    ]
)


class SlowPath(Exception):
    """The file's columns are not in the shapes the vectorized reader handles."""


def field(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array:
    """One field of a struct column as one array."""
    return one_array(field_chunks(col, name))


def field_chunks(col: pa.ChunkedArray | pa.Array, name: str) -> pa.ChunkedArray | pa.Array:
    """One field of a struct column, in the column's chunks (long texts are not copied)."""
    if not pa.types.is_struct(col.type) or col.type.get_field_index(name) < 0:
        raise SlowPath
    return pc.struct_field(col, name)


def optional_field(col: pa.ChunkedArray | pa.Array, name: str) -> pa.Array | None:
    """``field`` of a struct column, or None where the struct has no such field."""
    return field(col, name) if col.type.get_field_index(name) >= 0 else None


def is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def is_text_list(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t)) and is_text(t.value_type)


def gold_indices(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(first gold index per row, number of gold indices per row) of an int or list<int> column."""
    if col.null_count:
        raise SlowPath
    if pa.types.is_integer(col.type):
        return col.cast(pa.int64()), pa.array(np.ones(len(col), np.int64))
    if (pa.types.is_list(col.type) or pa.types.is_large_list(col.type)) and pa.types.is_integer(
        col.type.value_type
    ):
        return first_items(col).cast(pa.int64()), pc.list_value_length(col).cast(pa.int64())
    raise SlowPath


def string_lists(col) -> pa.Array:
    return pc.cast(col, STRING_LISTS) if col is not None else None


def logprob_texts(scores: pa.Array, choices: pa.Array | None) -> tuple[pa.Array, pa.Array]:
    """(response, prediction) of log-likelihood rows, each as a one-item list per row, as the row
    reader gives them (``rows._logprob_prediction``): the scores as a JSON list
    (``common.logprob_lists_json``) and the index of the highest score, the first of equals.

    ``scores``: per row a list of per-choice log-likelihoods (v0.11+ ``logprobs``) or of
    ``(logprob, is_greedy)`` pairs (v0.10 ``predictions``); a row without scores has neither.
    With ``choices`` (v0.10) every row must have a score per choice. Anything else (a NaN,
    whose maximum depends on the order; missing or non-numeric scores) is left to the row
    reader."""
    if not (pa.types.is_list(scores.type) or pa.types.is_large_list(scores.type)):
        raise SlowPath
    if scores.null_count:
        raise SlowPath
    n = len(scores)
    lengths = np.asarray(pc.list_value_length(scores).to_numpy(zero_copy_only=False), np.int64)
    items = pc.list_flatten(scores)
    if pa.types.is_list(items.type) or pa.types.is_large_list(items.type):
        if items.null_count or (len(items) and pc.min(pc.list_value_length(items)).as_py() == 0):
            raise SlowPath
        items = first_items(items)  # (logprob, is_greedy): the logprob
    if items.null_count or not (
        pa.types.is_integer(items.type) or pa.types.is_floating(items.type)
    ):
        raise SlowPath
    values = np.asarray(items.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)
    if np.isnan(values).any():
        raise SlowPath
    if choices is not None:
        k = np.asarray(pc.fill_null(pc.list_value_length(choices), 0).to_numpy(), np.int64)
        if not ((lengths == k) & (k > 0)).all():
            raise SlowPath
    best = first_max_positions(values, lengths)
    missing = best < 0
    prediction = pa.array(best, mask=missing).cast(pa.string())
    response = logprob_lists_json(pa.array(values), lengths)
    if missing.any():
        response = pc.if_else(pa.array(missing), pa.nulls(n, pa.string()), response)
    return one_item_lists(response), one_item_lists(prediction)


def uniform_table(table: pa.Table, nested: bool, metric: str | None) -> pa.Table:
    """One file in the uniform columns of ``UNIFORM``; SlowPath when its shapes are unusual."""
    n = table.num_rows
    names = table.column_names
    if nested:
        doc, response = table["doc"], table["model_response"]
        # the query and the prompt stay in the files' chunks (``uniform_rows``): no copy
        query = field_chunks(doc, "query")
        choices = field(doc, "choices")
        gold_index = field(doc, "gold_index")
        texts = field(response, "text")
        scores = optional_field(response, "logprobs")
        prompt = field_chunks(response, "input")
        metrics = one_array(table["metric"] if "metric" in names else table["metrics"])
        doc_id = optional_field(doc, "id")
        post = optional_field(response, "text_post_processed")
        has_specific = doc.type.get_field_index("specific") >= 0
        extracted = extracted_answers(field_chunks(doc, "specific")) if has_specific else None
        gold_texts = None
        prompt_cut = cut_counts(optional_field(response, "truncated_tokens_count"))
    else:
        query = table["example"]
        choices = one_array(table["choices"]) if "choices" in names else None
        gold_index = one_array(table["gold_index"]) if "gold_index" in names else None
        texts = scores = one_array(table["predictions"])
        prompt = table["full_prompt"] if "full_prompt" in names else query
        metrics = one_array(table["metrics"])
        doc_id = post = None
        extracted = extracted_answers(table["specifics"]) if "specifics" in names else None
        gold_texts = one_array(table["gold"]) if "gold" in names else None
        prompt_cut = cut_counts(one_array(table["truncated"]) if "truncated" in names else None)
    if choices is None or gold_index is None or not is_text_list(choices.type):
        raise SlowPath
    if not (is_text(query.type) and is_text(prompt.type)):
        raise SlowPath
    if not pa.types.is_struct(metrics.type):
        raise SlowPath
    scored = None  # log-likelihood rows: whether each has a prediction
    if not is_text_list(texts.type) or (n and not pc.max(pc.list_value_length(texts)).as_py()):
        # log-likelihood rows: a score per choice, no generated text
        if scores is None:
            raise SlowPath
        texts, post = logprob_texts(scores, None if nested else choices)
        scored = pc.is_valid(first_items(post))
    if texts.null_count or (n and pc.min(pc.list_value_length(texts)).as_py() == 0):
        raise SlowPath  # some rows with a text, some without
    if post is not None and pa.types.is_null(post.type):
        post = None
    if post is not None and not is_text_list(post.type):
        raise SlowPath
    if gold_texts is not None and not is_text_list(gold_texts.type):
        gold_texts = None
    if doc_id is not None and not is_text(doc_id.type):
        doc_id = pc.cast(doc_id, pa.string())

    # correct: the chosen metric, binary, in every row (else the row reader names the problem)
    name = chosen_metric(metrics, metric)
    correct = binary_column(pc.struct_field(metrics, metrics.type.get_field_index(name)))
    if correct is None:
        raise SlowPath
    first_gold, n_gold = gold_indices(gold_index)
    if pc.any(pc.greater(n_gold, 1)).as_py():
        raise SlowPath  # several gold answers: kept as a JSON list by the row reader
    return pa.table(
        [
            doc_id if doc_id is not None else pa.nulls(n, pa.string()),
            pc.cast(query, pa.string()),
            pc.cast(prompt, pa.string()),
            string_lists(texts),
            string_lists(post) if post is not None else pa.nulls(n, STRING_LISTS),
            extracted if extracted is not None else pa.nulls(n, STRING_LISTS),
            string_lists(choices),
            first_gold,
            n_gold,
            string_lists(gold_texts) if gold_texts is not None else pa.nulls(n, STRING_LISTS),
            correct,
            status_column(n, prompt_cut, extracted, scored),
        ],
        schema=UNIFORM,
    )


def chosen_metric(metrics: pa.Array, metric: str | None) -> str:
    """The metric ``correct`` is read from: ``metric``, else the first of ``DEFAULT_METRICS``
    with a value in some row; SlowPath where that one has none (the row reader names it)."""
    n = len(metrics)
    present = [
        metrics.type.field(i).name
        for i in range(metrics.type.num_fields)
        if pc.struct_field(metrics, i).null_count < n
    ]
    name = (
        metric if metric is not None else next((m for m in DEFAULT_METRICS if m in present), None)
    )
    if name is None or name not in present:
        raise SlowPath
    return name


def extracted_answers(specifics: pa.ChunkedArray | pa.Array) -> pa.Array | None:
    """The answers an extractive metric took out of each row's text (``specifics`` or
    ``doc.specific``: ``files.EXTRACTED``), as lists of strings; None where the file
    holds none; SlowPath where they are not lists of strings (the row reader takes them)."""
    if is_text(specifics.type):
        raise SlowPath  # stored as text
    if not pa.types.is_struct(specifics.type) or specifics.type.get_field_index(EXTRACTED) < 0:
        return None
    extracted = field(specifics, EXTRACTED)
    if pa.types.is_null(extracted.type):
        return None
    if not is_text_list(extracted.type):
        raise SlowPath
    return string_lists(extracted)


def option_columns(
    choices: pa.Array, first_gold: pa.Array, n_gold: pa.Array, gold_texts: pa.Array
) -> dict:
    """What a row's options and gold index give: ``num_choices`` (null for a generative item),
    ``gold`` (the gold option's text: choices[first_gold], else the file's gold list, else the
    index), ``choices_key`` (the options joined by \\x1f), ``gold_key`` (the gold text of a
    generative item, else the gold index) and ``choices`` (as JSON). The keys of a sample's id
    come from here alone, so a file read in slices (``forgetmap.importers.lighteval.slices``)
    keys its rows as a whole file would."""
    k = pc.fill_null(pc.list_value_length(choices), 0)
    num_choices = pc.if_else(
        pc.and_(pc.greater_equal(k, 2), pc.less(n_gold, k)), k.cast(pa.int16()), None
    )
    choice_values = pc.list_flatten(choices)
    offsets = (
        pc.subtract(choices.offsets[:-1], choices.offsets[0]).to_numpy()
        if len(choices)
        else np.zeros(0, np.int64)
    )
    fg = pc.fill_null(first_gold, -1).to_numpy()
    valid = (fg >= 0) & (fg < k.to_numpy())
    where = np.where(valid, offsets + np.maximum(fg, 0), -1)
    gold = pc.take(choice_values, pa.array(where, mask=~valid))
    gold = pc.coalesce(gold, first_items(gold_texts), pc.cast(first_gold, pa.string()))
    joined = pc.binary_join(choices, "\x1f")
    generative = pc.is_null(num_choices)
    return {
        "num_choices": num_choices,
        "gold": gold,
        "choices_key": joined,
        "gold_key": pc.if_else(generative, gold, pc.cast(first_gold, pa.string())),
        "choices": pc.if_else(pc.greater(k, 0), choices_json_column(joined), None),
    }


def from_uniform(table: pa.Table) -> dict:
    """``FILE_COLUMNS`` of the concatenated uniform rows of many files, with Arrow kernels."""
    # the texts stay in their per-file chunks (copying them is most of the cost); only the lists,
    # whose offsets are worked on in numpy, become one array each
    texts = ("doc_id", "prompt")
    cols = {
        name: table[name] if name in texts else one_array(table[name])
        for name in table.column_names
    }
    options = option_columns(
        cols["choices"], cols["first_gold"], cols["n_gold"], cols["gold_texts"]
    )
    response = first_items(cols["texts"])
    # the answer the metric extracted, else the post-processed text, else the text itself: a
    # chain of thought's answer is its letter, not its whole text again
    prediction = pc.coalesce(first_items(cols["extracted"]), first_items(cols["post"]), response)
    return {
        "doc_id": cols["doc_id"],
        "choices_key": options["choices_key"],
        "gold_key": options["gold_key"],
        "correct": cols["correct"],
        "num_choices": options["num_choices"],
        "prompt": cols["prompt"],
        "response": response,
        "prediction": prediction,
        "gold": options["gold"],
        "choices": options["choices"],
        "answer_status": cols["status"],
    }


def rows_table(columns: dict) -> pa.Table:
    return pa.table(
        {
            name: columns[name]
            if name in ("correct", "num_choices")
            else pc.cast(columns[name], pa.string())
            for name in FILE_COLUMNS
        }
    )


def uniform_or_none(table: pa.Table, nested: bool, metric: str | None) -> pa.Table | None:
    try:
        return uniform_table(table, nested, metric)
    except (SlowPath, pa.ArrowException):
        return None


def uniform_rows(read: list[tuple[pa.Table, bool]], metric: str | None) -> list[pa.Table | None]:
    """``uniform_table`` of each file (None where it is not in the usual shapes), the files of one
    layout done together: one call instead of one a file (~40 kernels each; a task of the
    paper's layout holds 6-33 files). Every check of ``uniform_table`` is a condition on all rows,
    or on the type, or holds for every file when it holds for all rows together (the chosen
    metric has no nulls, so it is the first default present in each file), so the files pass
    together exactly when each passes alone; when they do not, each file is tried alone."""
    if len(read) > 1:
        first, nested = read[0]
        if all(t.schema == first.schema and n == nested for t, n in read[1:]):
            together = uniform_or_none(pa.concat_tables([t for t, _ in read]), nested, metric)
            if together is not None:
                starts = np.cumsum([0] + [t.num_rows for t, _ in read])
                bounds = zip(starts[:-1], starts[1:], strict=True)
                return [together.slice(a, b - a) for a, b in bounds]
    return [uniform_or_none(table, nested, metric) for table, nested in read]


def questions_and_prompts(query, prompt) -> tuple[Questions, StoredPrompts]:
    """One file's questions (what all of its queries share removed: at word boundaries for keys,
    at line breaks for what lists show) and its prompts' template around each row's own part,
    the prompt standing in for a missing query (``prompt_or_query``). A whole file's reader and a
    sliced file's key pass (``slices``) both settle a file here."""
    questions = unit_questions(query)
    return questions, stored_prompts(prompt_or_query(prompt, query), questions.displayed)


def has_document_ids(doc_id: pa.Array | pa.ChunkedArray) -> bool:
    """Whether every row of a file has a document id (not blank): its ids are then its keys."""
    if doc_id.null_count:
        return False
    return not pc.any(pc.equal(pc.utf8_trim_whitespace(doc_id), "")).as_py()


def prompt_or_query(prompt: pa.Array, query: pa.Array) -> pa.Array:
    """The prompt, or the query where the file gives no prompt (an if_else copies every prompt:
    only when one is missing)."""
    prompt, query = one_array(prompt), one_array(query)
    missing = pc.fill_null(pc.equal(prompt, ""), True)
    return pc.if_else(missing, query, prompt) if pc.any(missing).as_py() else prompt
