"""Cloze questions: the Children's Book Test format and a King James Bible set.

The CBT file format (Hill et al., 2016) is a blank-line-separated list of
questions of 21 numbered lines: 20 context sentences, then

    21 <query with XXXXX>\\t<answer>\\t\\t<candidate>|<candidate>|...

`read_cbt` / `write_cbt` read and write it, so the same loader reads the real
CBT files and the questions built here.

`kjv_cloze()` builds CBT-style questions from the King James Bible (public
domain, Debian's `bible-kjv` + `bible-kjv-text`): 20 context verses, the 21st
with one word replaced by XXXXX, 10 candidates of the same kind drawn from
the context (the answer among them). The kinds:

- names: words capitalised at least 95% of the times they occur
  mid-sentence;
- common nouns / verbs: words whose senses tagged in SemCor (WordNet's
  `cntlist.rev`, Debian's `wordnet-base`) are at least 80% nouns / verbs,
  counted through their lemmas ("said" and "went" are verbs, "waters" a
  noun); a word SemCor never tagged counts when WordNet lists it only as a
  noun / only as a verb (CBT tagged its words in context; this is the
  type-level stand-in);
- prepositions: a fixed list.

A window step of one verse, one question per kind per window where the
answer appears in the context and the context holds at least 9 other words
of that kind. Windows never cross a book, and the split is by book, so no
test verse is seen in training.

`download_kjv(directory)` fetches and unpacks the three Debian packages
(`apt-get download`, `dpkg-deb -x`).
"""

import collections
import os
import re
import subprocess

import numpy as np

from kerattn import checks
from kerattn.datasets.textfile import numbered_lines

KINDS = ("names", "nouns", "verbs", "prepositions")
PREPOSITIONS = (
    "about", "above", "across", "after", "against", "along", "among", "around",
    "at", "before", "behind", "beneath", "beside", "between", "beyond", "by",
    "concerning", "down", "for", "from", "in", "into", "like", "near", "of",
    "off", "on", "out", "over", "through", "throughout", "to", "toward",
    "towards", "under", "until", "unto", "up", "upon", "with", "within",
    "without",
)
# Function words WordNet happens to list as nouns ("he" helium, "are" a
# unit of area, "a" the letter): never nouns or verbs here.
FUNCTION_WORDS = frozenset("""
a an the he she it we ye you thou thee thy thine his her hers its our ours
your yours their theirs them they me my mine us him i o am are is was were be
been being art hast hath had have has do does did doth dost shall shalt will
wilt would should could may might must can not no nor and or but if as so
than that this these those there then thus what which who whom whose when
where why how all any some each every one two three
""".split())
VALID_BOOKS = ("Judges", "Luke")
TEST_BOOKS = ("Joshua", "Job", "Mark", "Hebrews")
BLANK = "XXXXX"
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+|[^\w\s]")


# --- the CBT file format ------------------------------------------------------


def write_cbt(questions, path):
    """Write questions in the Children's Book Test (CBT) file format.

    Each question is its numbered context sentences, then a line
    `N query<TAB>answer<TAB><TAB>candidate|candidate|...`, then a blank
    line; `read_cbt` reads it back, and it reads Facebook's CBT files.

    Args:
        questions: dicts with `context` (a list of sentences), `query`
            (with the blank `XXXXX`), `answer` and `candidates` (a list).
        path: the file to write.

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> write_cbt([question], "kjv.txt")
    >>> read_cbt("kjv.txt")[0]["answer"]
    'Boaz'
    """
    with open(path, "w", encoding="utf-8") as handle:
        for q in questions:
            for number, sentence in enumerate(q["context"], 1):
                handle.write(f"{number} {sentence}\n")
            n = len(q["context"]) + 1
            handle.write(f"{n} {q['query']}\t{q['answer']}\t\t"
                         f"{'|'.join(q['candidates'])}\n\n")


def read_cbt(path):
    """Read a Children's Book Test (CBT) format file.

    Args:
        path: a file in the CBT format (Facebook's CBT files, or those
            `write_cbt` writes).

    Returns:
        A list of dicts: `context` (list of sentences), `query` (with
        XXXXX), `answer`, `candidates` (list).

    Raises:
        ValueError: a malformed line or a byte that does not decode (its
            `file:line` named), or a file without a question. A byte-order
            mark is removed (`kerattn.datasets.textfile`).

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> write_cbt([question, question], "kjv.txt")
    >>> questions = read_cbt("kjv.txt")
    >>> len(questions), questions[0]["candidates"]
    (2, ['Ruth', 'Boaz'])
    """
    questions, context = [], []
    for number, line in numbered_lines(path, what="a CBT-format file"):
        if not line.strip():
            continue
        index, _, text = line.partition(" ")
        if not index.isdigit():
            checks.bad_file(path, "a CBT line starts with its number; got "
                            f"{line[:40]!r}.", line=number)
        if "\t" in text:
            parts = text.split("\t")
            if len(parts) < 4:
                checks.bad_file(
                    path, "a question line is 'query\\tanswer\\t\\t"
                    f"candidates'; got {len(parts)} tab-separated fields.",
                    line=number)
            candidates = [c for c in parts[3].split("|") if c]
            if parts[1] not in candidates:
                checks.bad_file(
                    path, f"the answer {parts[1]!r} is not among the "
                    f"candidates {candidates}.", line=number)
            questions.append({
                "context": context, "query": parts[0], "answer": parts[1],
                "candidates": candidates,
            })
            context = []
        else:
            context.append(text)
    if not questions:
        checks.bad_file(path, "no question in the file.")
    return questions


# --- the King James Bible ---------------------------------------------------


def download_kjv(directory):
    """Fetch and unpack bible-kjv, bible-kjv-text and wordnet-base.

    Runs `apt-get download` (Debian's archive, no root needed) and
    `dpkg-deb -x`; nothing is installed.

    Args:
        directory: where the `.deb` files go; they are unpacked into
            `directory/root`.

    Returns:
        The directory they were unpacked into (`directory/root`), for
        `kjv_cloze`.

    Example:

    >>> root = download_kjv("kjv")  # doctest: +SKIP
    >>> splits = kjv_cloze(root)  # doctest: +SKIP
    """
    os.makedirs(directory, exist_ok=True)
    root = os.path.join(directory, "root")
    packages = ("bible-kjv", "bible-kjv-text", "wordnet-base")
    subprocess.run(["apt-get", "download", *packages], cwd=directory, check=True,
                   capture_output=True)
    for name in os.listdir(directory):
        if name.endswith(".deb"):
            subprocess.run(["dpkg-deb", "-x", os.path.join(directory, name), root],
                           check=True)
    return root


def read_kjv(root):
    """The verses, as `[(book, chapter, verse, text), ...]`, in order.

    Args:
        root: where bible-kjv and bible-kjv-text were unpacked (the
            directory holding `usr/bin/bible` and `usr/lib/bible.data`).
    """
    program = os.path.join(root, "usr", "bin", "bible")
    data = os.path.join(root, "usr", "lib")
    if not os.path.exists(program):
        raise FileNotFoundError(
            f"No {program}: unpack Debian's bible-kjv and bible-kjv-text into "
            f"`root` (kerattn.datasets.download_kjv does it).")
    text = subprocess.run(
        [program, "-p", data, "-l", "100000", "gen1:1-rev22:21"],
        check=True, capture_output=True, text=True).stdout
    verses, book, chapter = [], None, None
    for line in text.split("\n"):
        if not line.strip():
            continue
        if line.startswith(" "):
            number, _, verse = line.strip().partition(" ")
            verses.append((book, chapter, int(number), verse.strip()))
        else:
            book, _, chapter = line.strip().rpartition(" ")
            chapter = int(chapter)
    return verses


# Inflections of nouns and verbs (WordNet's morphy rules, plus the KJV's
# -eth and -est: "giveth", "knowest").
_SUFFIXES = {
    "noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
             ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"),
             ("ed", ""), ("ing", "e"), ("ing", ""), ("eth", ""), ("eth", "e"),
             ("est", ""), ("est", "e"), ("d", "")),
}


def _inflections(wordnet_dir, pos, lemmas):
    """`{inflected form: lemma}` for the lemmas of `pos` (exceptions first)."""
    forms = {}
    path = os.path.join(wordnet_dir, f"{pos}.exc")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 2 and parts[1] in lemmas:
                    forms.setdefault(parts[0], parts[1])
    return forms


def _lemma_candidates(word, pos, lemmas, exceptions):
    """The lemmas of `pos` that `word` may be, in order: the word itself, its
    exception-list lemma, then each suffix rule's base."""
    if word in lemmas:
        yield word
    if exceptions and word in exceptions:
        yield exceptions[word]
    for suffix, replacement in _SUFFIXES.get(pos, ()):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            base = word[: -len(suffix)] + replacement
            if base in lemmas:
                yield base


def _lemma(word, pos, lemmas, exceptions):
    return next(_lemma_candidates(word, pos, lemmas, exceptions), None)


_POS = ("noun", "verb", "adj", "adv")


def _wordnet_lemmas(wordnet_dir):
    """`{part of speech: set of lemmas}` from WordNet's four index files."""
    lemmas = {}
    for pos in _POS:
        path = os.path.join(wordnet_dir, f"index.{pos}")
        with open(path, encoding="utf-8") as handle:
            lemmas[pos] = {line.split(" ", 1)[0] for line in handle
                           if not line.startswith(" ")}
    return lemmas


def _only(lemmas, pos):
    """Lemmas listed as `pos` and as no other part of speech."""
    others = set().union(*(lemmas[p] for p in _POS if p != pos))
    return {w for w in lemmas[pos] - others if w.isalpha()}


_SENSE_TYPES = {"1": "noun", "2": "verb", "3": "adj", "4": "adv", "5": "adj"}


def _semcor_counts(wordnet_dir):
    """`{lemma: Counter({part of speech: SemCor-tagged count})}` from
    WordNet's `cntlist.rev`, or None when the directory lacks it."""
    path = os.path.join(wordnet_dir, "cntlist.rev")
    if not os.path.exists(path):
        return None
    counts = collections.defaultdict(collections.Counter)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if len(parts) != 3 or "%" not in parts[0]:
                continue
            lemma, _, kind = parts[0].partition("%")
            counts[lemma][_SENSE_TYPES.get(kind[:1], "other")] += int(parts[2])
    return counts


def _tagged(word, pos, lemmas, exceptions, counts):
    """SemCor's count of `word` as `pos`: the largest count among the word
    itself (when a lemma of `pos`) and the lemmas it inflects ("waters" is
    a lemma of its own, rarely tagged, and the plural of "water")."""
    candidates = set(_lemma_candidates(word, pos, lemmas, exceptions))
    return max((counts[c][pos] for c in candidates if c in counts), default=0)


def word_kinds(verses, wordnet_dir, name_share=0.95, min_name_count=2,
               pos_share=0.8):
    """`{kind: set of words}` for the four kinds (names keep their case).

    Nouns and verbs: at least `pos_share` of the word's SemCor-tagged
    senses are of that part of speech (`cntlist.rev`); a word SemCor never
    tagged, or a WordNet without `cntlist.rev`, falls back to WordNet
    listing it under that part of speech only.
    """
    tokens = [_TOKEN.findall(text) for _, _, _, text in verses]
    mid_upper, mid_total = collections.Counter(), collections.Counter()
    for words in tokens:
        for prev, word in zip(words, words[1:]):
            if word.isalpha() and prev not in (".", "?", "!", ":", ";"):
                mid_total[word.lower()] += 1
                mid_upper[word.lower()] += word[0].isupper()
    names = {w.capitalize() for w, n in mid_total.items()
             if n >= min_name_count and mid_upper[w] >= name_share * n
             and len(w) > 1}  # not the pronoun "I" or the vocative "O"
    lower_names = {n.lower() for n in names}
    vocabulary = {w for words in tokens for w in words if w.isalpha() and w.islower()}
    candidates = {w for w in vocabulary - lower_names - FUNCTION_WORDS if len(w) > 2}
    lemmas = _wordnet_lemmas(wordnet_dir)
    every_lemma = set().union(*lemmas.values())
    kinds, untagged = {}, candidates
    counts = _semcor_counts(wordnet_dir)
    if counts is not None:
        exceptions = {pos: _inflections(wordnet_dir, pos, lemmas[pos])
                      for pos in ("noun", "verb")}
        tagged = {w: {pos: _tagged(w, pos, lemmas[pos], exceptions.get(pos), counts)
                      for pos in _POS} for w in candidates}
        untagged = {w for w in candidates if not any(tagged[w].values())}
        for kind, pos in (("nouns", "noun"), ("verbs", "verb")):
            kinds[kind] = {w for w in candidates - untagged
                           if tagged[w][pos] >= pos_share * sum(tagged[w].values())}
    for kind, pos in (("nouns", "noun"), ("verbs", "verb")):
        only = _only(lemmas, pos)
        other = every_lemma - only
        exceptions = _inflections(wordnet_dir, pos, only)
        # An inflected form counts when its lemma is of this kind only and
        # the form itself is no lemma of another part of speech.
        kinds[kind] = kinds.get(kind, set()) | {
            w for w in untagged - other if _lemma(w, pos, only, exceptions)}
    nouns, verbs = kinds["nouns"], kinds["verbs"] - kinds["nouns"]
    return {"names": names, "nouns": nouns, "verbs": verbs,
            "prepositions": set(PREPOSITIONS)}


def _kind_of(word, kinds):
    if word in kinds["names"]:
        return "names"
    for kind in ("nouns", "verbs", "prepositions"):
        if word in kinds[kind]:
            return kind
    return None


def kjv_cloze(root, wordnet_dir=None, context_size=20, num_candidates=10,
              step=1, seed=0, valid_books=VALID_BOOKS, test_books=TEST_BOOKS):
    """CBT-style cloze questions from the King James Bible, split by book.

    Args:
        root: where the Debian packages were unpacked (`download_kjv`).
        wordnet_dir: WordNet's dict directory; `root/usr/share/wordnet`
            when None.
        context_size: context verses per question (20, as CBT).
        num_candidates: candidates per question, answer included (10).
        step: the window step in verses.
        seed: the random seed of the answer and candidate choice.
        valid_books, test_books: the held-out books.

    Returns:
        `{"train": [...], "valid": [...], "test": [...]}`; each question a
        dict with `context`, `query`, `answer`, `candidates`, `kind`, `book`.

    Example:

    >>> root = download_kjv("kjv")  # doctest: +SKIP
    >>> splits = kjv_cloze(root)  # doctest: +SKIP
    >>> len(splits["test"]), splits["test"][0]["kind"]  # doctest: +SKIP
    (5411, 'names')
    """
    for name, value, low in (("context_size", context_size, 1),
                             ("num_candidates", num_candidates, 2), ("step", step, 1)):
        checks.int_at_least(name, value, low)
    if wordnet_dir is not None and not os.path.isdir(wordnet_dir):
        raise FileNotFoundError(f"`wordnet_dir`={wordnet_dir!r} is not a directory "
                                "(WordNet's dict directory).")
    wordnet_dir = wordnet_dir or os.path.join(root, "usr", "share", "wordnet")
    verses = read_kjv(root)
    kinds = word_kinds(verses, wordnet_dir)
    rng = np.random.default_rng(seed)
    by_book = collections.OrderedDict()
    for book, _, _, text in verses:
        by_book.setdefault(book, []).append(_TOKEN.findall(text))
    splits = {"train": [], "valid": [], "test": []}
    for book, book_verses in by_book.items():
        split = ("test" if book in test_books
                 else "valid" if book in valid_books else "train")
        for end in range(context_size, len(book_verses), step):
            context = book_verses[end - context_size:end]
            query = book_verses[end]
            context_words = collections.Counter(w for v in context for w in v)
            by_kind = collections.defaultdict(list)
            for word in context_words:
                kind = _kind_of(word, kinds)
                if kind:
                    by_kind[kind].append(word)
            for kind in KINDS:
                pool = sorted(by_kind[kind])
                if len(pool) < num_candidates:
                    continue
                slots = [i for i, w in enumerate(query)
                         if _kind_of(w, kinds) == kind and w in context_words]
                if not slots:
                    continue
                slot = slots[int(rng.integers(len(slots)))]
                answer = query[slot]
                others = [w for w in pool if w != answer]
                picks = rng.choice(len(others), num_candidates - 1, replace=False)
                candidates = sorted([answer] + [others[i] for i in picks])
                blanked = query[:slot] + [BLANK] + query[slot + 1:]
                splits[split].append({
                    "context": [" ".join(v) for v in context],
                    "query": " ".join(blanked), "answer": answer,
                    "candidates": candidates, "kind": kind, "book": book,
                })
    return splits


# --- baselines -------------------------------------------------------------


def _context_tokens(question):
    return [w for sentence in question["context"] for w in sentence.split(" ")]


def most_frequent_baseline(question):
    """The candidate that occurs most often in the context.

    Args:
        question: a dict with `context`, `candidates` (as `read_cbt` gives).

    Returns:
        The chosen candidate; ties go to the earlier candidate.

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> most_frequent_baseline(question)
    'Ruth'
    """
    counts = collections.Counter(_context_tokens(question))
    return max(question["candidates"], key=lambda c: (counts[c], -question[
        "candidates"].index(c)))


def bigram_baseline(question):
    """The candidate whose bigrams with the query's neighbours of XXXXX
    occur most often in the context; ties by frequency in the context.

    Args:
        question: a dict with `context`, `query`, `candidates`.

    Returns:
        The chosen candidate.

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> bigram_baseline(question)  # "Boaz spake" is unseen; "Boaz saw" ...
    'Ruth'
    """
    tokens = _context_tokens(question)
    query = question["query"].split(" ")
    slot = query.index(BLANK)
    left = query[slot - 1] if slot > 0 else None
    right = query[slot + 1] if slot + 1 < len(query) else None
    bigrams = collections.Counter(zip(tokens, tokens[1:]))
    counts = collections.Counter(tokens)

    def score(c):
        return (bigrams[(left, c)] + bigrams[(c, right)], counts[c],
                -question["candidates"].index(c))

    return max(question["candidates"], key=score)


def baseline_accuracy(questions, baseline):
    """Accuracy of a baseline function per kind and overall.

    Args:
        questions: dicts as `read_cbt` gives; an optional `kind` key
            (names, nouns, verbs, prepositions) adds per-kind figures.
        baseline: a function question -> chosen candidate, e.g.
            `most_frequent_baseline` or `bigram_baseline`.

    Returns:
        A dict kind -> accuracy, with `"all"` over every question.

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> baseline_accuracy([question], most_frequent_baseline)
    {'all': 0.0}
    """
    hits = collections.defaultdict(list)
    for q in questions:
        ok = baseline(q) == q["answer"]
        hits[q.get("kind", "all")].append(ok)
        if "kind" in q:
            hits["all"].append(ok)
    return {k: float(np.mean(v)) for k, v in hits.items()}


# --- ids for the reader --------------------------------------------------------


def encode_cloze(questions, vocab, max_document=None, max_query=None):
    """Questions -> padded int32 arrays for `kerattn.zoo.aoa_reader`.

    The document is the context sentences joined (lower-cased words, as in
    the vocabulary). An answer cut off by `max_document` is kept only when
    it occurs in what remains.

    Args:
        questions: dicts with `context`, `query`, `answer`, `candidates`.
        vocab: the `WordVocabulary` of `cloze_vocabulary`.
        max_document, max_query: optional lengths to cut and pad to;
            None pads to the longest.

    Returns:
        A dict: `document_ids` `(n, D)`, `query_ids` `(n, Q)`,
        `candidate_ids` `(n, C)` and `answer_index` `(n,)` (the answer's
        position among the candidates).

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> arrays = encode_cloze([question], cloze_vocabulary([question]))
    >>> arrays["document_ids"].shape, arrays["answer_index"]
    ((1, 9), array([1], dtype=int32))
    """
    checks.require(hasattr(vocab, "stoi") and hasattr(vocab, "unk_id"), "vocab",
                   "a kerattn.datasets.WordVocabulary", type(vocab).__name__)
    checks.positive_int("max_document", max_document, allow_none=True)
    checks.positive_int("max_query", max_query, allow_none=True)
    questions = list(questions)
    checks.some("questions", questions, "one question")
    for i, q in enumerate(questions):
        missing = [k for k in ("query", "answer", "candidates") if k not in q]
        missing += [] if "context" in q else ["context"]
        checks.require(not missing, "questions", "questions with context, "
                       "query, answer and candidates",
                       note=f"questions[{i}] lacks {missing}.")
        checks.require(q["answer"] in q["candidates"], "questions",
                       "questions whose answer is among their candidates",
                       note=f"The answer {q['answer']!r} of questions[{i}] is not.")

    def ids(words):
        return [vocab.stoi.get(w.lower(), vocab.unk_id) for w in words]

    docs = [ids(_context_tokens(q)) for q in questions]
    queries = [ids(q["query"].split(" ")) for q in questions]
    cands = [ids(q["candidates"]) for q in questions]
    d = max_document or max(map(len, docs))
    qn = max_query or max(map(len, queries))
    c = max(map(len, cands))
    out = {
        "document_ids": np.zeros((len(docs), d), "int32"),
        "query_ids": np.zeros((len(docs), qn), "int32"),
        "candidate_ids": np.zeros((len(docs), c), "int32"),
        "answer_index": np.zeros((len(docs),), "int32"),
    }
    for i, q in enumerate(questions):
        out["document_ids"][i, : min(d, len(docs[i]))] = docs[i][:d]
        out["query_ids"][i, : min(qn, len(queries[i]))] = queries[i][:qn]
        out["candidate_ids"][i, : len(cands[i])] = cands[i]
        out["answer_index"][i] = q["candidates"].index(q["answer"])
    return out


def cloze_vocabulary(questions, min_count=1, max_size=None):
    """A lower-cased `WordVocabulary` over contexts, queries and candidates.

    XXXXX is a word of its own (the query's blank).

    Args:
        questions: dicts with `context` and `query`.
        min_count: keep words seen at least this often.
        max_size: optional cap on the vocabulary size (specials included).

    Returns:
        A `WordVocabulary` (PAD, UNK, BOS, EOS, then words by frequency).

    Example:

    >>> question = {"context": ["Ruth went to Boaz .", "Boaz saw Ruth ."],
    ...             "query": "And XXXXX spake unto Ruth .", "answer": "Boaz",
    ...             "candidates": ["Ruth", "Boaz"]}
    >>> vocab = cloze_vocabulary([question])
    >>> vocab.itos[4:7]
    ['.', 'ruth', 'boaz']
    """
    from kerattn.datasets.vocabulary import WordVocabulary

    counts = collections.Counter()
    for q in questions:
        counts.update(w.lower() for w in _context_tokens(q))
        counts.update(w.lower() for w in q["query"].split(" "))
    counts[BLANK.lower()] += min_count
    ranked = sorted((w for w, n in counts.items() if n >= min_count),
                    key=lambda w: (-counts[w], w))
    if max_size is not None:
        ranked = ranked[: max_size - 4]
    return WordVocabulary(ranked, lowercase=True)
