"""Start a study of your own documents and questions: write ``studies/<name>/profile.yaml`` (the
offline profile's models and designs, your files, your folder) and print the study's name; `make
study` then renders the whole report for it (`make report PROFILE=<name>`).

Usage: python scripts/new_study.py --docs PATH [--questions PATH] [--qrels PATH] [--name NAME]
       [--fields id=doc_id,title=headline,text=body] [--question-fields id=qid,question=text,relevant=doc]
       [--metadata a,b] [--format jsonl|csv|parquet|beir] [--set KEY=VALUE ...]

--docs: JSON-lines, CSV or Parquet (one document a row) or a BEIR folder (corpus.jsonl, queries.jsonl,
qrels/<split>.tsv: its questions and judgements come with it; --questions replaces its queries.jsonl and --qrels
its qrels/<split>.tsv, and the files read are printed). Without --questions (and not BEIR),
the question writer and reviewer write questions for a seeded draw of your documents.
--set: any other setting (e.g. --set llm_backend=openai --set llm_model=my-model --set n_runs=3).
A study that exists is kept when its settings are the same, so the command resumes; a study whose
settings differ is refused (choose another --name, or remove its folder).

--from-env (`make study`): the values are read from the environment, never from a shell line, so no
quote, `$(...)`, backtick or `;` in them is run: STUDY_DOCS, STUDY_QUESTIONS, STUDY_QRELS, STUDY_NAME,
STUDY_FIELDS, STUDY_QUESTION_FIELDS, STUDY_METADATA, STUDY_FORMAT and STUDY_SET (KEY=VALUE words
separated by spaces), each as its option; an empty one is not given.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lib.config import PROFILE_DIR, ROOT, STUDIES_DIR, Settings, load_profile, parameter_value  # noqa: E402
from lib.errors import DataError, ProfileError  # noqa: E402

# the study's own settings over the offline profile's (its models, designs and scores)
BASE_PROFILE = "offline"


def pairs(text: str | None, what: str) -> dict[str, str]:
    """'a=b,c=d' -> {'a': 'b', 'c': 'd'}."""
    out = {}
    for item in filter(None, (text or "").split(",")):
        if "=" not in item:
            raise ProfileError(f"{what}: expected name=column pairs joined by ',', got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


NAME_MAX = 80


def study_name(docs: Path, given: str | None) -> str:
    name = given or re.sub(r"[^A-Za-z0-9_-]+", "-", docs.stem if docs.is_file() else docs.name).strip("-")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name or ""):
        raise ProfileError(f"--name: a study name is letters, digits, '-' and '_', got {name!r}")
    if len(name) > NAME_MAX:  # it names a folder and files inside it (a file name has at most 255 bytes)
        raise ProfileError(f"--name: a study name has at most {NAME_MAX} characters, got {len(name)} "
                           f"({name[:20]}...); give a shorter NAME=")
    if (PROFILE_DIR / f"{name}.yaml").exists():
        raise ProfileError(f"--name: {name!r} is a profile of the shipped study (profiles/{name}.yaml); choose another")
    return name


def shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def study_settings(args) -> tuple[str, dict]:
    docs = Path(args.docs).expanduser()
    if not docs.exists():
        raise DataError(f"--docs: {args.docs}: no such file or folder")
    name = study_name(docs, args.name)
    folder = STUDIES_DIR / name
    base = yaml.safe_load((PROFILE_DIR / f"{BASE_PROFILE}.yaml").read_text())
    beir = docs.is_dir() or args.format == "beir"
    settings = {**base, "profile": name, "data_dir": shown(folder / "data"), "results_dir": shown(folder / "results"),
                "collection_source": "documents", "documents_path": shown(docs),
                "documents_format": args.format or ("beir" if beir else None),
                "document_fields": pairs(args.fields, "--fields"), "document_metadata":
                [m for m in (args.metadata or "").split(",") if m],
                "question_fields": pairs(args.question_fields, "--question-fields"),
                "questions_source": "user" if (args.questions or beir) else "generate",
                "user_questions_path": shown(Path(args.questions).expanduser()) if args.questions else None,
                "qrels_path": shown(Path(args.qrels).expanduser()) if args.qrels else None,
                "questions_path": shown(folder / "data" / "questions.csv"), "twopart_questions_path": None,
                "chunk_documents": True, "source_ids": [], "pool_exclude": [], "pool_before": None,
                # your data, your model: the LLM designs ask the local model unless told otherwise
                "llm_backend": "local", "llm_record_backend": "local", "n_runs": 1}
    for item in args.set or []:
        if "=" not in item:
            raise ProfileError(f"--set: expected KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        if key not in Settings.model_fields or key in ("profile", "data_dir", "results_dir"):
            raise ProfileError(f"--set: {key!r} is not a setting a study may change")
        settings[key] = parameter_value(key, value)
    if settings["llm_backend"] != "replay":  # the calls are recorded under the backend that answers them
        settings["llm_record_backend"] = settings["llm_backend"]
    return name, settings


def write_study(name: str, settings: dict) -> Path:
    """Write the study's profile; an existing one is kept when equal, refused when it differs."""
    folder = STUDIES_DIR / name
    path = folder / "profile.yaml"
    text = ("# A study of your own data, written by `make study` (scripts/new_study.py); every setting as in\n"
            "# profiles/offline.yaml unless named here. Everything the study writes goes into this folder.\n"
            + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True))
    if path.exists():
        old = yaml.safe_load(path.read_text())
        if old != settings:
            changed = sorted(k for k in set(old) | set(settings) if old.get(k) != settings.get(k))
            raise ProfileError(f"{shown(path)}: a study named {name!r} exists with other settings ({', '.join(changed)}); "
                               "choose another NAME=, or remove its folder to start again")
        return path
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# the environment variables `make study` passes (--from-env), each the option it stands for
ENV_OPTIONS = {"STUDY_DOCS": "--docs", "STUDY_QUESTIONS": "--questions", "STUDY_QRELS": "--qrels",
               "STUDY_NAME": "--name", "STUDY_FIELDS": "--fields", "STUDY_QUESTION_FIELDS": "--question-fields",
               "STUDY_METADATA": "--metadata", "STUDY_FORMAT": "--format"}


def options_from_env(environ) -> list[str]:
    """The command line of ``make study``'s variables, from ``environ`` (each value one word, as given)."""
    out = []
    for var, option in ENV_OPTIONS.items():
        if environ.get(var):
            out.append(f"{option}={environ[var]}")  # one word, even one starting with '-'
    for item in (environ.get("STUDY_SET") or "").split():
        out.append(f"--set={item}")
    return out


def main(argv: list[str]) -> int:
    if "--from-env" in argv:
        argv = [a for a in argv if a != "--from-env"] + options_from_env(os.environ)
        if not any(a.startswith("--docs") for a in argv):
            print("error: make study needs DOCS=path (a JSON-lines, CSV or Parquet file, or a BEIR folder)",
                  file=sys.stderr)
            return 2
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", required=True)
    ap.add_argument("--questions")
    ap.add_argument("--qrels")
    ap.add_argument("--name")
    ap.add_argument("--fields")
    ap.add_argument("--question-fields")
    ap.add_argument("--metadata")
    ap.add_argument("--format", choices=["jsonl", "csv", "parquet", "beir"])
    ap.add_argument("--set", action="append")
    args = ap.parse_args(argv)
    try:
        name, settings = study_settings(args)
        Settings(**settings)  # every value checked before anything is written
        path = write_study(name, settings)
        load_profile(name)
    except (ProfileError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a validation error of the settings: one line a setting, as a profile's are named
        from pydantic import ValidationError

        from lib.config import _explain

        if isinstance(exc, ValidationError):
            print(f"error: {_explain(exc, 'SET')}", file=sys.stderr)
            return 2
        raise
    print(name)
    print(f"study {name!r}: {shown(path)}", file=sys.stderr)
    if settings["documents_format"] == "beir" and (args.questions or args.qrels):  # the files read, not the folder's
        split = settings.get("beir_split", "test")
        print(f"study {name!r}: the BEIR folder's questions are read from "
              f"{settings['user_questions_path'] or settings['documents_path'] + '/queries.jsonl'}, its judgements from "
              f"{settings['qrels_path'] or settings['documents_path'] + f'/qrels/{split}.tsv'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    from lib.progress import interruptible

    sys.exit(interruptible(main, sys.argv[1:]))  # Ctrl-C: one line, no traceback
