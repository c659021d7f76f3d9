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

class ErasePairRequest(_message.Message):
    __slots__ = ("pair", "reason")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    reason: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class EraseUserRequest(_message.Message):
    __slots__ = ("user_id", "reason")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    reason: str
    def __init__(self, user_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ErasureReceipt(_message.Message):
    __slots__ = ("id", "scope", "state", "requested_at", "finished_at", "counts", "steps_done", "token", "error", "reason")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    STEPS_DONE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: int
    scope: str
    state: str
    requested_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    counts: _containers.ScalarMap[str, int]
    steps_done: _containers.RepeatedScalarFieldContainer[str]
    token: str
    error: str
    reason: str
    def __init__(self, id: _Optional[int] = ..., scope: _Optional[str] = ..., state: _Optional[str] = ..., requested_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., counts: _Optional[_Mapping[str, int]] = ..., steps_done: _Optional[_Iterable[str]] = ..., token: _Optional[str] = ..., error: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ListErasuresRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class ListErasuresResponse(_message.Message):
    __slots__ = ("erasures",)
    ERASURES_FIELD_NUMBER: _ClassVar[int]
    erasures: _containers.RepeatedCompositeFieldContainer[ErasureReceipt]
    def __init__(self, erasures: _Optional[_Iterable[_Union[ErasureReceipt, _Mapping]]] = ...) -> None: ...

class ExportPairRequest(_message.Message):
    __slots__ = ("pair",)
    PAIR_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ...) -> None: ...

class ExportChunk(_message.Message):
    __slots__ = ("lines", "total_lines")
    LINES_FIELD_NUMBER: _ClassVar[int]
    TOTAL_LINES_FIELD_NUMBER: _ClassVar[int]
    lines: _containers.RepeatedScalarFieldContainer[str]
    total_lines: int
    def __init__(self, lines: _Optional[_Iterable[str]] = ..., total_lines: _Optional[int] = ...) -> None: ...

class ImportPairRequest(_message.Message):
    __slots__ = ("pair", "lines")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    LINES_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    lines: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., lines: _Optional[_Iterable[str]] = ...) -> None: ...

class ImportPairResponse(_message.Message):
    __slots__ = ("pair", "counts")
    class CountsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    PAIR_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    counts: _containers.ScalarMap[str, int]
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., counts: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ForgetMemoryRequest(_message.Message):
    __slots__ = ("pair", "node_id", "source_turn_id", "reason")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_id: int
    source_turn_id: str
    reason: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_id: _Optional[int] = ..., source_turn_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class ForgetMemoryResponse(_message.Message):
    __slots__ = ("node_ids", "kzg_keys", "edges", "session_turns")
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    KZG_KEYS_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    SESSION_TURNS_FIELD_NUMBER: _ClassVar[int]
    node_ids: _containers.RepeatedScalarFieldContainer[int]
    kzg_keys: _containers.RepeatedScalarFieldContainer[str]
    edges: int
    session_turns: int
    def __init__(self, node_ids: _Optional[_Iterable[int]] = ..., kzg_keys: _Optional[_Iterable[str]] = ..., edges: _Optional[int] = ..., session_turns: _Optional[int] = ...) -> None: ...

class CorrectMemoryRequest(_message.Message):
    __slots__ = ("pair", "node_id", "kzg_key", "inhalt", "reason")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_id: int
    kzg_key: str
    inhalt: str
    reason: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_id: _Optional[int] = ..., kzg_key: _Optional[str] = ..., inhalt: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CorrectMemoryResponse(_message.Message):
    __slots__ = ("node_id", "kzg_key", "edges_removed", "edges_created", "previous_inhalt")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    EDGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    EDGES_CREATED_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_INHALT_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    kzg_key: str
    edges_removed: int
    edges_created: int
    previous_inhalt: str
    def __init__(self, node_id: _Optional[int] = ..., kzg_key: _Optional[str] = ..., edges_removed: _Optional[int] = ..., edges_created: _Optional[int] = ..., previous_inhalt: _Optional[str] = ...) -> None: ...

class RequeueParkedJobsRequest(_message.Message):
    __slots__ = ("job_ids", "all")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ALL_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    all: bool
    def __init__(self, job_ids: _Optional[_Iterable[str]] = ..., all: _Optional[bool] = ...) -> None: ...

class RequeueParkedJobsResponse(_message.Message):
    __slots__ = ("requeued", "gone", "job_ids")
    REQUEUED_FIELD_NUMBER: _ClassVar[int]
    GONE_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    requeued: int
    gone: int
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, requeued: _Optional[int] = ..., gone: _Optional[int] = ..., job_ids: _Optional[_Iterable[str]] = ...) -> None: ...
