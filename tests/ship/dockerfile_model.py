"""What the Dockerfile builds, read without Docker: stages, build args, COPY sources, ENV and the .dockerignore.

The Dockerfile is parsed with Docker's own parser (the ``dockerfile`` package wraps moby/buildkit's Go parser);
this module adds the few rules the tests need on top: build-arg expansion (``$X``, ``${X}``, ``${X:-word}``,
``${X:+word}``), stage lookup, ``COPY --from`` resolution back to files of the build context, and
``.dockerignore`` matching. Tests use it to rebuild an image's contents in a temporary folder.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import dockerfile

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"

_VARIABLE = re.compile(
    r"\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::(?P<op>[-+])(?P<word>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def expand(text: str, variables: Mapping[str, str]) -> str:
    """Docker's variable substitution: ``$X``, ``${X}``, ``${X:-default}``, ``${X:+alternative}``."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group("braced") or match.group("bare")
        value = variables.get(name, "")
        if match.group("op") == "-":
            return value or match.group("word")
        if match.group("op") == "+":
            return match.group("word") if value else ""
        return value

    return _VARIABLE.sub(substitute, text)


@dataclass
class Instruction:
    cmd: str  # upper case: FROM, COPY, RUN, ...
    flags: tuple[str, ...]
    value: tuple[str, ...]
    original: str


@dataclass
class Stage:
    name: str
    base: str  # image or earlier stage, build args expanded
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, cmd: str) -> list[Instruction]:
        return [i for i in self.instructions if i.cmd == cmd]


@dataclass(frozen=True)
class Copy:
    """One file copied into an image: where it comes from in the build context and where it lands."""

    source: Path  # absolute path in the build context (the repository)
    destination: PurePosixPath  # absolute path in the image


class Dockerfile:
    def __init__(self, path: Path = DOCKERFILE, build_args: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.global_args: dict[str, str] = {}
        self.stages: list[Stage] = []
        for command in dockerfile.parse_file(str(path)):
            instruction = Instruction(command.cmd.upper(), tuple(command.flags), tuple(command.value), command.original)
            if instruction.cmd == "ARG" and not self.stages:
                name, _, default = instruction.value[0].partition("=")
                self.global_args[name] = shlex.split(default)[0] if default.strip() else ""
            elif instruction.cmd == "FROM":
                image, *rest = instruction.value
                name = rest[1] if len(rest) >= 2 and rest[0].upper() == "AS" else str(len(self.stages))
                args = {**self.global_args, **(build_args or {})}
                self.stages.append(Stage(name, expand(image, args)))
            else:
                self.stages[-1].instructions.append(instruction)
        self.build_args = {**self.global_args, **(build_args or {})}

    def stage(self, name: str) -> Stage:
        for stage in self.stages:
            if stage.name.lower() == name.lower():
                return stage
        raise KeyError(f"the Dockerfile has no stage {name!r}; it has {[s.name for s in self.stages]}")

    def has_stage(self, name: str) -> bool:
        return any(s.name.lower() == name.lower() for s in self.stages)

    def chain(self, target: str) -> list[Stage]:
        """The stages ``target`` is built on, base first (``FROM other-stage`` links)."""
        stages = [self.stage(target)]
        while self.has_stage(stages[0].base):
            stages.insert(0, self.stage(stages[0].base))
        return stages

    def instructions(self, target: str) -> list[Instruction]:
        return [i for stage in self.chain(target) for i in stage.instructions]

    def env(self, target: str) -> dict[str, str]:
        """Every ENV of ``target``'s chain, later values winning."""
        environment: dict[str, str] = {}
        for instruction in self.instructions(target):
            if instruction.cmd == "ENV":
                pairs = instruction.value
                for name, value in zip(pairs[::2], pairs[1::2], strict=True):
                    environment[name] = expand(shlex.split(value)[0] if value else "", environment)
        return environment

    def workdir(self, target: str) -> PurePosixPath:
        workdir = PurePosixPath("/")
        for instruction in self.instructions(target):
            if instruction.cmd == "WORKDIR":
                workdir = workdir / instruction.value[0]
        return workdir

    def last(self, target: str, cmd: str) -> Instruction | None:
        found = [i for i in self.instructions(target) if i.cmd == cmd]
        return found[-1] if found else None

    def copies(
        self, target: str, ignore: DockerIgnore | None = None, overrides: Mapping[str, Path] | None = None
    ) -> list[Copy]:
        """Every file ``target``'s chain copies from the build context, directly or through ``COPY --from``.

        ``overrides`` maps a context folder (as the COPY line spells it, without the trailing slash) to another
        folder whose files stand in for it (a test bundle for ``model_artifacts/default``, say)."""
        ignore = ignore or DockerIgnore.read()
        overrides = overrides or {}
        files: list[Copy] = []
        workdir = PurePosixPath("/")
        for instruction in self.instructions(target):
            if instruction.cmd == "WORKDIR":
                workdir = workdir / instruction.value[0]
            if instruction.cmd not in ("COPY", "ADD"):
                continue
            *sources, destination = instruction.value
            sources = [expand(source, self.build_args) for source in sources]  # COPY ${BUNDLE}/ ...
            target_dir = workdir / destination
            origin = next((f.split("=", 1)[1] for f in instruction.flags if f.startswith("--from=")), None)
            for source in sources:
                if origin is None:
                    replacement = overrides.get(source.rstrip("/"))
                    if replacement is not None:
                        files.extend(_folder_files(Path(replacement), target_dir))
                    else:
                        files.extend(_context_files(source, target_dir, destination.endswith("/"), ignore))
                else:
                    files.extend(self._files_from_stage(origin, source, target_dir, ignore, overrides))
        return files

    def _files_from_stage(
        self,
        stage_name: str,
        source: str,
        target_dir: PurePosixPath,
        ignore: DockerIgnore,
        overrides: Mapping[str, Path],
    ) -> Iterator[Copy]:
        """The context files that stage ``stage_name`` holds under ``source``, moved to ``target_dir``."""
        stage = self.stage(stage_name)
        provider = self.stage(stage.base) if self.has_stage(stage.base) and not stage.instructions else stage
        prefix = PurePosixPath(source)
        found = False
        for copied in self.copies(provider.name, ignore, overrides):
            if copied.destination == prefix or prefix in copied.destination.parents:
                found = True
                yield Copy(copied.source, target_dir / copied.destination.relative_to(prefix))
        if not found:
            raise LookupError(f"stage {provider.name!r} copies nothing from the build context into {source}")


def _folder_files(folder: Path, target_dir: PurePosixPath) -> Iterator[Copy]:
    for file in sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        yield Copy(file, target_dir / file.relative_to(folder).as_posix())


def _context_files(source: str, target_dir: PurePosixPath, into_dir: bool, ignore: DockerIgnore) -> Iterator[Copy]:
    path = REPO_ROOT / source
    if not path.exists():
        raise FileNotFoundError(f"COPY source {source} is not in the build context ({REPO_ROOT})")
    if path.is_file():
        if ignore.excluded(path.relative_to(REPO_ROOT).as_posix()):
            raise FileNotFoundError(f"COPY source {source} is excluded by .dockerignore")
        yield Copy(path, target_dir / path.name if into_dir else target_dir)
        return
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        relative = file.relative_to(REPO_ROOT).as_posix()
        if not ignore.excluded(relative):
            yield Copy(file, target_dir / file.relative_to(path).as_posix())


class DockerIgnore:
    """``.dockerignore`` rules: Go ``filepath.Match`` patterns plus ``**``; ``!`` re-includes; the last match wins;
    a pattern that matches a folder matches everything in it."""

    def __init__(self, lines: list[str]) -> None:
        self.rules: list[tuple[bool, re.Pattern[str]]] = []
        for line in lines:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            include = line.startswith("!")
            pattern = line[1:] if include else line
            self.rules.append((include, re.compile(_glob_to_regex(pattern.strip().strip("/")))))

    @classmethod
    def read(cls, path: Path = DOCKERIGNORE) -> DockerIgnore:
        return cls(path.read_text().splitlines() if path.exists() else [])

    def excluded(self, relative: str) -> bool:
        parts = PurePosixPath(relative).parts
        candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        excluded = False
        for include, pattern in self.rules:
            if any(pattern.fullmatch(candidate) for candidate in candidates):
                excluded = not include
        return excluded


def _glob_to_regex(pattern: str) -> str:
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            regex += ".*"
            i += 2
        elif pattern[i] == "*":
            regex += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            regex += "[^/]"
            i += 1
        else:
            regex += re.escape(pattern[i])
            i += 1
    return regex


def materialise(copies: list[Copy], root: Path) -> None:
    """Copy ``copies`` under ``root`` as if ``root`` were the image's ``/``."""
    for copied in copies:
        destination = root / copied.destination.relative_to("/")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(copied.source, destination)
