import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from novaberg.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LogRecord(_message.Message):
    __slots__ = ("id", "erstellt_am", "turn_id", "span_id", "quelle", "node", "art", "inhalt_json", "user_id", "character_id", "trace_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    QUELLE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ART_FIELD_NUMBER: _ClassVar[int]
    INHALT_JSON_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    erstellt_am: _timestamp_pb2.Timestamp
    turn_id: str
    span_id: str
    quelle: str
    node: str
    art: str
    inhalt_json: str
    user_id: str
    character_id: str
    trace_id: str
    def __init__(self, id: _Optional[int] = ..., erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ..., span_id: _Optional[str] = ..., quelle: _Optional[str] = ..., node: _Optional[str] = ..., art: _Optional[str] = ..., inhalt_json: _Optional[str] = ..., user_id: _Optional[str] = ..., character_id: _Optional[str] = ..., trace_id: _Optional[str] = ...) -> None: ...

class WriteBatch(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[LogRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[LogRecord, _Mapping]]] = ...) -> None: ...

class WriteSummary(_message.Message):
    __slots__ = ("inserted",)
    INSERTED_FIELD_NUMBER: _ClassVar[int]
    inserted: int
    def __init__(self, inserted: _Optional[int] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("turn_id", "span_id", "node", "art", "pair", "since", "until", "trace_id", "quelle", "limit", "descending")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    ART_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    QUELLE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    DESCENDING_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    span_id: str
    node: str
    art: str
    pair: _common_pb2.Pair
    since: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    trace_id: str
    quelle: str
    limit: int
    descending: bool
    def __init__(self, turn_id: _Optional[str] = ..., span_id: _Optional[str] = ..., node: _Optional[str] = ..., art: _Optional[str] = ..., pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., trace_id: _Optional[str] = ..., quelle: _Optional[str] = ..., limit: _Optional[int] = ..., descending: _Optional[bool] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[LogRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[LogRecord, _Mapping]]] = ...) -> None: ...

class PurgeRequest(_message.Message):
    __slots__ = ("as_of", "retention_days", "pairs")
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    RETENTION_DAYS_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    as_of: _timestamp_pb2.Timestamp
    retention_days: int
    pairs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Pair]
    def __init__(self, as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retention_days: _Optional[int] = ..., pairs: _Optional[_Iterable[_Union[_common_pb2.Pair, _Mapping]]] = ...) -> None: ...

class PurgeResponse(_message.Message):
    __slots__ = ("deleted", "kept_turn_roh")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    KEPT_TURN_ROH_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    kept_turn_roh: int
    def __init__(self, deleted: _Optional[int] = ..., kept_turn_roh: _Optional[int] = ...) -> None: ...

class LastAnswersRequest(_message.Message):
    __slots__ = ("quelle", "limit", "node")
    QUELLE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    quelle: str
    limit: int
    node: str
    def __init__(self, quelle: _Optional[str] = ..., limit: _Optional[int] = ..., node: _Optional[str] = ...) -> None: ...

class Answer(_message.Message):
    __slots__ = ("text", "erstellt_am", "turn_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    erstellt_am: _timestamp_pb2.Timestamp
    turn_id: str
    def __init__(self, text: _Optional[str] = ..., erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ...) -> None: ...

class LastAnswersResponse(_message.Message):
    __slots__ = ("answers",)
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[Answer]
    def __init__(self, answers: _Optional[_Iterable[_Union[Answer, _Mapping]]] = ...) -> None: ...

class ClusterCountsRequest(_message.Message):
    __slots__ = ("since", "until", "pair")
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    since: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    pair: _common_pb2.Pair
    def __init__(self, since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ...) -> None: ...

class ClusterCount(_message.Message):
    __slots__ = ("cluster", "count")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    count: int
    def __init__(self, cluster: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class ClusterCountsResponse(_message.Message):
    __slots__ = ("counts",)
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    counts: _containers.RepeatedCompositeFieldContainer[ClusterCount]
    def __init__(self, counts: _Optional[_Iterable[_Union[ClusterCount, _Mapping]]] = ...) -> None: ...

class TokenUsageRequest(_message.Message):
    __slots__ = ("since", "until")
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    since: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    def __init__(self, since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TokenUsageResponse(_message.Message):
    __slots__ = ("input_tokens", "output_tokens", "kosten_usd", "calls")
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    KOSTEN_USD_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    input_tokens: int
    output_tokens: int
    kosten_usd: float
    calls: int
    def __init__(self, input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., kosten_usd: _Optional[float] = ..., calls: _Optional[int] = ...) -> None: ...

class EraseRequest(_message.Message):
    __slots__ = ("target",)
    TARGET_FIELD_NUMBER: _ClassVar[int]
    target: _common_pb2.ErasureTarget
    def __init__(self, target: _Optional[_Union[_common_pb2.ErasureTarget, _Mapping]] = ...) -> None: ...

class EraseResponse(_message.Message):
    __slots__ = ("rows", "turn_roh", "unpaired_rows")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    TURN_ROH_FIELD_NUMBER: _ClassVar[int]
    UNPAIRED_ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: int
    turn_roh: int
    unpaired_rows: int
    def __init__(self, rows: _Optional[int] = ..., turn_roh: _Optional[int] = ..., unpaired_rows: _Optional[int] = ...) -> None: ...
