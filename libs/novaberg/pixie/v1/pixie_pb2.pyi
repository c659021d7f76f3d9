import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from novaberg.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Task(_message.Message):
    __slots__ = ("name", "schedule", "priority", "paused", "last_run")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_FIELD_NUMBER: _ClassVar[int]
    name: str
    schedule: str
    priority: float
    paused: bool
    last_run: Run
    def __init__(self, name: _Optional[str] = ..., schedule: _Optional[str] = ..., priority: _Optional[float] = ..., paused: _Optional[bool] = ..., last_run: _Optional[_Union[Run, _Mapping]] = ...) -> None: ...

class Run(_message.Message):
    __slots__ = ("id", "task", "started_at", "ended_at", "outcome", "counts", "error", "replica", "run_day", "pairs")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    RUN_DAY_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    id: int
    task: str
    started_at: _timestamp_pb2.Timestamp
    ended_at: _timestamp_pb2.Timestamp
    outcome: str
    counts: _containers.ScalarMap[str, int]
    error: str
    replica: str
    run_day: str
    pairs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Pair]
    def __init__(self, id: _Optional[int] = ..., task: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ended_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., outcome: _Optional[str] = ..., counts: _Optional[_Mapping[str, int]] = ..., error: _Optional[str] = ..., replica: _Optional[str] = ..., run_day: _Optional[str] = ..., pairs: _Optional[_Iterable[_Union[_common_pb2.Pair, _Mapping]]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ...) -> None: ...

class TriggerTaskRequest(_message.Message):
    __slots__ = ("task", "as_of", "force", "pairs")
    TASK_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    task: str
    as_of: _timestamp_pb2.Timestamp
    force: bool
    pairs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Pair]
    def __init__(self, task: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., force: _Optional[bool] = ..., pairs: _Optional[_Iterable[_Union[_common_pb2.Pair, _Mapping]]] = ...) -> None: ...

class TriggerTaskResponse(_message.Message):
    __slots__ = ("run",)
    RUN_FIELD_NUMBER: _ClassVar[int]
    run: Run
    def __init__(self, run: _Optional[_Union[Run, _Mapping]] = ...) -> None: ...

class PauseTaskRequest(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: str
    def __init__(self, task: _Optional[str] = ...) -> None: ...

class ResumeTaskRequest(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: str
    def __init__(self, task: _Optional[str] = ...) -> None: ...

class ListRunsRequest(_message.Message):
    __slots__ = ("task", "limit")
    TASK_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    task: str
    limit: int
    def __init__(self, task: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListRunsResponse(_message.Message):
    __slots__ = ("runs",)
    RUNS_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[Run]
    def __init__(self, runs: _Optional[_Iterable[_Union[Run, _Mapping]]] = ...) -> None: ...

class ParkedJob(_message.Message):
    __slots__ = ("job_id", "kzg_key", "user_id", "character_id", "attempts", "last_error", "parked_at")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    PARKED_AT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    kzg_key: str
    user_id: str
    character_id: str
    attempts: int
    last_error: str
    parked_at: _timestamp_pb2.Timestamp
    def __init__(self, job_id: _Optional[str] = ..., kzg_key: _Optional[str] = ..., user_id: _Optional[str] = ..., character_id: _Optional[str] = ..., attempts: _Optional[int] = ..., last_error: _Optional[str] = ..., parked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListParkedJobsRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListParkedJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[ParkedJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[ParkedJob, _Mapping]]] = ...) -> None: ...
