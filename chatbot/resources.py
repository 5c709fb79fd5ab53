"""Where the shipped files are (prompts, models, demo cards, calibration, migrations) and where reports go.

Every reader asks this module, never ``Path(__file__)``, so a source checkout and an installed wheel
(``pip install .``) find the same files. The prompts and the shipped models live at the repository root in
git (``prompts/``, ``models/``); the wheel carries them as package data under ``chatbot/_shipped/``
(pyproject.toml). Files that already sit inside a package (demo cards, calibration, migrations) are read
there in both cases. Output never goes inside the package: reports go to ``paths.results_dir``
(``default_results_dir``), indexes and databases to ``paths.data_dir``.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

SHIPPED = "_shipped"  # chatbot/_shipped/{models,prompts} inside a wheel


def _package_dir(package: str) -> Path:
    """The folder of an installed regular package (wheels are unpacked, so it is a real folder)."""
    return Path(str(files(package)))


def source_root() -> Path | None:
    """The source checkout this code runs from (editable install or PYTHONPATH); None for an installed copy."""
    root = _package_dir("chatbot").parent
    if (root / "pyproject.toml").is_file() and (root / "prompts").is_dir() and (root / "models").is_dir():
        return root
    return None


def _shipped(name: str) -> Path:
    """``chatbot/_shipped/NAME`` in a wheel, else ``NAME`` at the root of the source checkout."""
    installed = _package_dir("chatbot") / SHIPPED / name
    if installed.is_dir():
        return installed
    root = source_root()
    if root is None:
        raise FileNotFoundError(
            f"{name}/ is neither in the installed package ({installed}) nor in a source checkout: "
            "reinstall the package (pip install .)"
        )
    return root / name


def prompts_dir() -> Path:
    """The prompt templates (``prompts/*.txt``)."""
    return _shipped("prompts")


def shipped_model(name: str) -> Path:
    """A model folder shipped with the code: ``models/reranker`` or ``models/redflags``."""
    return _shipped("models") / name


def demo_cards() -> Path:
    """The bundled demonstration corpus (``corpus/demo/cards``): uncertified example cards."""
    return _package_dir("corpus") / "demo" / "cards"


def calibration_file() -> Path:
    """The fitted logical-pipeline calibrations (``chatbot/logical/calibration.json``)."""
    return _package_dir("chatbot") / "logical" / "calibration.json"


def synonyms_file() -> Path:
    """The NOT-term synonym groups, English and Italian (``chatbot/logical/data/synonyms.tsv``)."""
    return _package_dir("chatbot") / "logical" / "data" / "synonyms.tsv"


def gloss_dir() -> Path:
    """The Italian → English glossary of patients' words (``chatbot/data/gloss-it-en/*.tsv``, chatbot.gloss)."""
    return _package_dir("chatbot") / "data" / "gloss-it-en"


def patient_words_dir(language: str = "en") -> Path:
    """Patients' words for the cards' terms in one language (``chatbot/data/patient-words-<language>/*.tsv``,
    chatbot.patient_words)."""
    return _package_dir("chatbot") / "data" / f"patient-words-{language}"


def migrations_dir() -> Path:
    """Alembic's script location (env.py, script.py.mako, versions/)."""
    return _package_dir("chatbot") / "store" / "migrations"


def workspace_root() -> Path:
    """The source checkout when the code runs from one, else the current directory: the base of outputs
    and dataset folders that belong to a working copy rather than to the package."""
    return source_root() or Path.cwd()


def default_results_dir() -> Path:
    """``evaluation/results`` of the source checkout when the code runs from one (whatever the working
    directory), else ``./results`` under the current directory: never inside site-packages."""
    root = source_root()
    return root / "evaluation" / "results" if root is not None else Path.cwd() / "results"


def shared_data_dir() -> Path:
    """The public BEIR sets beside the working copy (``../shared/data``), for benchmarks and training."""
    return workspace_root().parent / "shared" / "data"
