"""Install commands naming a package one or two letters away from a popular one (``reqeusts``, ``lodahs``,
``python3-dateutil``): the classic typosquat, which a memory would have every later agent install."""

from __future__ import annotations

import re

from rapidfuzz.distance import DamerauLevenshtein

PYPI = frozenset(
    """requests numpy pandas urllib3 boto3 botocore setuptools six python-dateutil pyyaml certifi idna
    charset-normalizer typing-extensions pip wheel cryptography packaging attrs jinja2
    markupsafe click pydantic pytest flask django
    fastapi sqlalchemy psycopg2 psycopg2-binary pillow matplotlib scipy scikit-learn tensorflow torch torchvision
    transformers beautifulsoup4 lxml selenium colorama tqdm rich textual openai anthropic httpx aiohttp uvicorn
    gunicorn celery redis pymongo docker kubernetes paramiko pyjwt jsonschema protobuf grpcio google-cloud-storage
    awscli pylint black ruff mypy isort flake8 coverage tox virtualenv poetry pipenv sentry-sdk stripe twilio
    openpyxl xlrd pyarrow polars dask seaborn plotly streamlit gradio langchain tiktoken sentencepiece keras
    networkx sympy nltk spacy opencv-python pyserial pexpect ansible fabric invoke boto peewee rapidfuzz
    python-dotenv dotenv termcolor tabulate simplejson ujson orjson msgpack toml tomli tomlkit arrow pendulum
    pytz tzdata babel werkzeug itsdangerous marshmallow alembic""".split()
)
NPM = frozenset(
    """react react-dom lodash express axios chalk commander debug moment vue angular next typescript webpack babel-core
    @babel/core eslint prettier jest mocha chai request async underscore uuid dotenv yargs inquirer ws socket.io
    mongoose sequelize pg mysql mysql2 redis jsonwebtoken bcrypt bcryptjs cors body-parser helmet morgan nodemon
    cross-env rimraf glob minimist semver colors classnames prop-types redux react-redux styled-components
    tailwindcss postcss autoprefixer vite rollup esbuild jquery bootstrap d3 three electron puppeteer playwright
    cheerio node-fetch got superagent zod yup formik date-fns dayjs luxon ramda immer rxjs graphql apollo-server
    prisma typeorm knex bluebird fs-extra mkdirp ora boxen execa shelljs cross-spawn nanoid qs body-parser
    coffee-script event-stream ua-parser-js node-ipc""".split()
)
KNOWN = (
    PYPI
    | NPM
    | frozenset(
        # real packages near a popular name: not squats
        """request requests-oauthlib requests-toolbelt boto3-stubs pandas-stubs types-requests urllib3-secure-extra
    pytest-cov pytest-xdist pytest-asyncio flask-cors django-cors-headers pydantic-core pydantic-settings numpyro
    pyyml chai-http react-dom-server vue-router next-auth torchaudio torchtext colorlog six-moves httpcore
    anyio sniffio starlette types-pyyaml typing_extensions python_dateutil charset_normalizer scikit-image
    psycopg psycopg-binary black-macchiato ruff-lsp mypy-extensions tox-uv coveralls poetry-core uv""".split()
    )
)
STOP = frozenset("to for and then the with in on from so if when before after first or but is are as".split())
INSTALL = re.compile(
    r"\b(?:pip3?|uv pip|uv add|pipx|poetry add|pdm add|conda install|npm (?:i|install|add)|yarn add"
    r"|pnpm (?:add|i|install)|bun (?:add|i|install)|npx)\s+((?:[-@\w./:=<>~^!]+\s*){1,8})"
)


def typosquats(text: str) -> list[str]:
    """``name (like popular)`` for each package installed in ``text`` that is a near miss of a popular one."""
    found = []
    for command in INSTALL.finditer(text):
        for word in command.group(1).split():
            if not word.isascii() or word in STOP:
                break  # the command's list of packages has ended: prose goes on
            name = re.split(r"[=<>~^!\[]", word.lstrip("-"), maxsplit=1)[0].lower()
            if word.startswith("-") or len(name) < 5 or name in KNOWN or "/" in name.lstrip("@"):
                continue
            near = _nearest(name)
            if near:
                found.append(f"{name} (like {near})")
    return found


def _nearest(name: str) -> str | None:
    for popular in PYPI | NPM:
        limit = 1 if len(popular) < 8 else 2
        if abs(len(popular) - len(name)) <= limit and DamerauLevenshtein.distance(name, popular) <= limit:
            if name.replace("-", "").replace("_", "") != popular.replace("-", "").replace("_", ""):
                return popular
    return None
