"""A sequence whose items are made when it is walked: a stored run's samples read from the store
(store/columns.StoredSamples), a merged document's renamed samples (analyse/parts). Both hold
nothing but how to walk; an index or a slice walks to it (rare: the views that show a sample
walk them in order), so the one definition of indexing is here."""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeVar, overload, runtime_checkable

T = TypeVar("T")


class Walked(Sequence[T]):
    """`__len__` and `__iter__` from the subclass; `seq[i]` and `seq[a:b:c]` as a list's."""

    @abstractmethod
    def __len__(self) -> int: ...

    @abstractmethod
    def __iter__(self) -> Iterator[T]: ...

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> list[T]: ...

    def __getitem__(self, index: int | slice) -> T | list[T]:
        n = len(self)
        if isinstance(index, slice):
            start, stop, step = index.indices(n)
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return list(itertools.islice(iter(self), start, max(start, stop)))
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(index)
        return next(itertools.islice(iter(self), i, None))


@runtime_checkable
class Columnar(Protocol):
    """Samples that can also be read as columns of their fields, never as records (a stored
    run's, store/columns.StoredSamples; a run renamed by names, analyse/parts): what the JSON
    report and the samples CSV write from (report/samplerows.py). Each answer is the records'
    own or None: then the records are walked (the general way)."""

    def field_columns(self, size: int) -> Iterator[list[tuple[Any, ...]]] | None:
        """The samples in order, `size` at a time, each batch one tuple per field of Sample
        (store/rowstream.FIELD_NAMES) holding what the records' fields hold."""

    def metric_names(self) -> set[str] | None:
        """Every metric name any of the samples holds (not cleaned)."""
