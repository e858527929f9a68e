# syntax=docker/dockerfile:1
# Container images of the Chinese→English translation function.
#
#   make image     BUNDLE=model_artifacts/<name>   # AWS Lambda (target lambda), baking a bundle `make model` wrote
#   make image-gcp BUNDLE=model_artifacts/<name>   # Cloud Run / Cloud Functions (target cloudrun)
#   docker build --target lambda --build-arg BUNDLE=model_artifacts/<name> -t zh-en-translate:lambda .
#   docker build --target lambda --build-arg MODEL=Helsinki-NLP/opus-mt-zh-en -t zh-en-translate:lambda .
#
# BUNDLE (default model_artifacts/default, the committed bundle) names a finished bundle folder under
# model_artifacts/: it is copied as it is, with no torch and no network in the build, and keeps its name. MODEL
# (a Hugging Face hub id, or a checkpoint folder under model_artifacts/ such as a downloaded ModelScope CSANMT
# folder) instead makes a build stage with torch export, quantize and verify that model with
# `python -m build.export` (network needed: the PyTorch CPU index, the hub; a CSANMT folder also installs
# TensorFlow there). Either way the runtime image installs requirements/csanmt.txt (the CSANMT tokenizer) only
# when the baked manifest says family csanmt.
# Runtime images hold Python, the pinned and hashed runtime requirements (no torch, no transformers), handler/,
# (main.py for Cloud Run) and the bundle, run as a non-root user, and load and warm the model at import.
# tests/ship/test_runtime_image.py rebuilds exactly these contents without an engine and checks them;
# make image-check builds and runs the real images.

ARG PYTHON_IMAGE=python:3.11-slim
ARG BUNDLE=model_artifacts/default
ARG MODEL=""
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

# ---- the bundle: a finished one from the build context (the committed default unless BUNDLE says)... ------
FROM scratch AS bundle
ARG BUNDLE
COPY ${BUNDLE}/ /bundle/

# ---- ...or one exported from MODEL at build time (torch CPU wheel; needs network for hub ids) -----------
FROM ${PYTHON_IMAGE} AS bundle-export
ARG MODEL
ARG TORCH_INDEX_URL
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 HOME=/tmp PYTHONUNBUFFERED=1
WORKDIR /src
COPY requirements/installer.txt requirements/build.txt requirements/
# The pinned installer first (requirements/installer.txt: the lock files read alike whatever pip the base image
# has), then torch from the PyTorch CPU index (PyPI's torch is the CUDA build); the hashed lock file then finds it
# installed. The `if`s only matter to the classic builder (e.g. under `sam build`), which builds every stage.
RUN if [ -n "$MODEL" ]; then \
        pip install --require-hashes -r requirements/installer.txt \
        && pip install --index-url "$TORCH_INDEX_URL" torch==2.13.0+cpu \
        && pip install --require-hashes -r requirements/build.txt; \
    fi
COPY build/ build/
COPY handler/ handler/
COPY model_artifacts/ model_artifacts/
# The family decides the rest: a CSANMT folder (ModelScope layout) also needs TensorFlow to read its checkpoint
# and the tokenizer libraries (requirements/dev.txt holds them, locked together with build.txt's pins). A MODEL
# that is no usable checkpoint fails here, with build.families' reason.
COPY requirements/dev.txt requirements/dev.txt
RUN if [ -n "$MODEL" ]; then \
        family="$(python -m build.families "$MODEL")" \
        && echo "MODEL=$MODEL is a $family checkpoint" \
        && if [ "$family" = csanmt ]; then pip install --require-hashes -r requirements/dev.txt; fi; \
    fi
RUN if [ -n "$MODEL" ]; then \
        python -m build.export --model "$MODEL" --out /bundle --name "$(basename "$MODEL")"; \
    else mkdir /bundle; fi

# Chooses the bundle stage: "bundle" when MODEL is empty, "bundle-export" otherwise (a stage, not an image).
# hadolint ignore=DL3006
FROM bundle${MODEL:+-export} AS selected-bundle

# ---- runtime base -----------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime-base
# A function's file system is read-only except /tmp: HOME (onnxruntime's cache folder) and caches live there,
# and Python never writes bytecode at run time (it is compiled into the image below). MALLOC_ARENA_MAX: glibc
# otherwise gives each server thread its own heap (docs/decisions.md). TRANSLATE_STATE_DIR: an image run without an
# output bucket (docker run, a Cloud Run service without TRANSLATE_OUTPUT_BUCKET) keeps DeepL's documents and
# glossaries and LibreTranslate's translated files in /tmp, not in the read-only /app.
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HOME=/tmp \
    XDG_CACHE_HOME=/tmp/.cache \
    TRANSLATE_STATE_DIR=/tmp/translate-state \
    MALLOC_ARENA_MAX=2
RUN useradd --system --uid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin translator
# The pinned installer reads the lock files below, not whichever pip the base image came with
# (requirements/installer.txt; docs/decisions.md, "The installer is pinned too").
COPY requirements/installer.txt /tmp/installer.txt
RUN pip install --require-hashes -r /tmp/installer.txt && rm /tmp/installer.txt
WORKDIR /app

# ---- Cloud Run / Cloud Functions image: functions-framework serving main.py --------------------------------
FROM runtime-base AS cloudrun
COPY requirements/runtime-gcp.txt /tmp/requirements.txt
RUN pip install --require-hashes -r /tmp/requirements.txt && rm /tmp/requirements.txt
# A CSANMT bundle's tokenizer libraries (jieba, subword-nmt, sacremoses), only when the baked bundle's
# manifest says family csanmt: the default image stays within its size budget.
COPY requirements/csanmt.txt /tmp/requirements-csanmt.txt
COPY --from=selected-bundle /bundle/manifest.json /tmp/bundle-manifest.json
RUN if python -c "import json, sys; sys.exit(json.load(open(sys.argv[1])).get('family') != 'csanmt')" \
        /tmp/bundle-manifest.json; then pip install --require-hashes -r /tmp/requirements-csanmt.txt; fi \
    && rm /tmp/requirements-csanmt.txt /tmp/bundle-manifest.json
COPY handler/ ./handler/
COPY main.py ./
COPY --from=selected-bundle /bundle/ ./model_artifacts/default/
RUN python -m compileall -q handler main.py
# functions-framework's server (handler/adapters/gunicorn_server.py: the functions-framework command with a 75 s keep-alive,
# so an idle connection is never closed as a request arrives on it) reads its options from these; deploy a second
# service with FUNCTION_TARGET=translate_storage_event for Cloud Storage (Eventarc) events.
ENV FUNCTION_SOURCE=main.py \
    FUNCTION_TARGET=translate_http \
    HOST=0.0.0.0 \
    PORT=8080
USER 10001
EXPOSE 8080
CMD ["python", "-m", "handler.adapters.gunicorn_server"]

# ---- AWS Lambda image (the default target): the runtime interface client calls the handler ---------------
FROM runtime-base AS lambda
COPY requirements/runtime-aws.txt /tmp/requirements.txt
RUN pip install --require-hashes -r /tmp/requirements.txt && rm /tmp/requirements.txt
# A CSANMT bundle's tokenizer libraries (jieba, subword-nmt, sacremoses), only when the baked bundle's
# manifest says family csanmt: the default image stays within its size budget.
COPY requirements/csanmt.txt /tmp/requirements-csanmt.txt
COPY --from=selected-bundle /bundle/manifest.json /tmp/bundle-manifest.json
RUN if python -c "import json, sys; sys.exit(json.load(open(sys.argv[1])).get('family') != 'csanmt')" \
        /tmp/bundle-manifest.json; then pip install --require-hashes -r /tmp/requirements-csanmt.txt; fi \
    && rm /tmp/requirements-csanmt.txt /tmp/bundle-manifest.json
COPY handler/ ./handler/
COPY --from=selected-bundle /bundle/ ./model_artifacts/default/
RUN python -m compileall -q handler
USER 10001
# the image's Runtime API loop (handler/adapters/lambda_runtime.py; awslambdaric's handler loading, context and logs):
# one invocation at a time, or AWS_LAMBDA_MAX_CONCURRENCY of them in this one process on Lambda Managed Instances,
# with the Runtime API's response streaming (handler/adapters/lambda_streaming.py): the CMD lambda_handler answers as
# `python -m awslambdaric` does; the template's FunctionUrlInvokeMode RESPONSE_STREAM sets the command to
# handler.adapters.aws_lambda.streaming_handler, whose Function URL answers stream
ENTRYPOINT ["python", "-m", "handler.adapters.lambda_streaming"]
CMD ["handler.adapters.aws_lambda.lambda_handler"]
