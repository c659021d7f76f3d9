import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from novaberg.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StoreOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STORE_OUTCOME_UNSPECIFIED: _ClassVar[StoreOutcome]
    STORE_OUTCOME_STORED: _ClassVar[StoreOutcome]
    STORE_OUTCOME_REJECTED_BELOW_GATE: _ClassVar[StoreOutcome]
    STORE_OUTCOME_REPEATED: _ClassVar[StoreOutcome]

class Tier(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TIER_UNSPECIFIED: _ClassVar[Tier]
    TIER_MINIMUM: _ClassVar[Tier]
    TIER_MID: _ClassVar[Tier]
    TIER_HIGH: _ClassVar[Tier]
STORE_OUTCOME_UNSPECIFIED: StoreOutcome
STORE_OUTCOME_STORED: StoreOutcome
STORE_OUTCOME_REJECTED_BELOW_GATE: StoreOutcome
STORE_OUTCOME_REPEATED: StoreOutcome
TIER_UNSPECIFIED: Tier
TIER_MINIMUM: Tier
TIER_MID: Tier
TIER_HIGH: Tier

class SessionTurn(_message.Message):
    __slots__ = ("role", "text", "turn_id", "created_at", "intention", "emotion", "modus", "arousal", "emotions_vektor")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    INTENTION_FIELD_NUMBER: _ClassVar[int]
    EMOTION_FIELD_NUMBER: _ClassVar[int]
    MODUS_FIELD_NUMBER: _ClassVar[int]
    AROUSAL_FIELD_NUMBER: _ClassVar[int]
    EMOTIONS_VEKTOR_FIELD_NUMBER: _ClassVar[int]
    role: str
    text: str
    turn_id: str
    created_at: _timestamp_pb2.Timestamp
    intention: str
    emotion: str
    modus: str
    arousal: float
    emotions_vektor: str
    def __init__(self, role: _Optional[str] = ..., text: _Optional[str] = ..., turn_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., intention: _Optional[str] = ..., emotion: _Optional[str] = ..., modus: _Optional[str] = ..., arousal: _Optional[float] = ..., emotions_vektor: _Optional[str] = ...) -> None: ...

class AppendSessionTurnRequest(_message.Message):
    __slots__ = ("pair", "turn", "as_of", "resend_safe")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    RESEND_SAFE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    turn: SessionTurn
    as_of: _timestamp_pb2.Timestamp
    resend_safe: bool
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., turn: _Optional[_Union[SessionTurn, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., resend_safe: _Optional[bool] = ...) -> None: ...

class AppendSessionTurnResponse(_message.Message):
    __slots__ = ("turn_count", "summarized", "trimmed", "repeated")
    TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    SUMMARIZED_FIELD_NUMBER: _ClassVar[int]
    TRIMMED_FIELD_NUMBER: _ClassVar[int]
    REPEATED_FIELD_NUMBER: _ClassVar[int]
    turn_count: int
    summarized: bool
    trimmed: bool
    repeated: bool
    def __init__(self, turn_count: _Optional[int] = ..., summarized: _Optional[bool] = ..., trimmed: _Optional[bool] = ..., repeated: _Optional[bool] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ("pair", "as_of", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    as_of: _timestamp_pb2.Timestamp
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class GetSessionResponse(_message.Message):
    __slots__ = ("turns", "summary", "ttl_seconds")
    TURNS_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    turns: _containers.RepeatedCompositeFieldContainer[SessionTurn]
    summary: str
    ttl_seconds: int
    def __init__(self, turns: _Optional[_Iterable[_Union[SessionTurn, _Mapping]]] = ..., summary: _Optional[str] = ..., ttl_seconds: _Optional[int] = ...) -> None: ...

class StoreEntryRequest(_message.Message):
    __slots__ = ("pair", "beobachter", "inhalt", "salience", "ei", "magnets", "turn", "embedding", "entry_id", "as_of", "writer", "sprecher", "sprache", "embedding_model_id", "resend_safe", "antwort_auf")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    SALIENCE_FIELD_NUMBER: _ClassVar[int]
    EI_FIELD_NUMBER: _ClassVar[int]
    MAGNETS_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    WRITER_FIELD_NUMBER: _ClassVar[int]
    SPRECHER_FIELD_NUMBER: _ClassVar[int]
    SPRACHE_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    RESEND_SAFE_FIELD_NUMBER: _ClassVar[int]
    ANTWORT_AUF_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    beobachter: _common_pb2.Beobachter
    inhalt: str
    salience: _common_pb2.SalienceResult
    ei: _common_pb2.EiFields
    magnets: _common_pb2.Magnets
    turn: _common_pb2.TurnContext
    embedding: _containers.RepeatedScalarFieldContainer[float]
    entry_id: str
    as_of: _timestamp_pb2.Timestamp
    writer: str
    sprecher: str
    sprache: str
    embedding_model_id: str
    resend_safe: bool
    antwort_auf: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., inhalt: _Optional[str] = ..., salience: _Optional[_Union[_common_pb2.SalienceResult, _Mapping]] = ..., ei: _Optional[_Union[_common_pb2.EiFields, _Mapping]] = ..., magnets: _Optional[_Union[_common_pb2.Magnets, _Mapping]] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., embedding: _Optional[_Iterable[float]] = ..., entry_id: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., writer: _Optional[str] = ..., sprecher: _Optional[str] = ..., sprache: _Optional[str] = ..., embedding_model_id: _Optional[str] = ..., resend_safe: _Optional[bool] = ..., antwort_auf: _Optional[str] = ...) -> None: ...

class StoreEntryResponse(_message.Message):
    __slots__ = ("outcome", "kzg_key", "tier", "salienz", "ttl_seconds", "queued_for_promotion", "reinforced_count", "reinforced_queued_count", "canon_rejections")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    TIER_FIELD_NUMBER: _ClassVar[int]
    SALIENZ_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FOR_PROMOTION_FIELD_NUMBER: _ClassVar[int]
    REINFORCED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REINFORCED_QUEUED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CANON_REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    outcome: StoreOutcome
    kzg_key: str
    tier: Tier
    salienz: float
    ttl_seconds: int
    queued_for_promotion: bool
    reinforced_count: int
    reinforced_queued_count: int
    canon_rejections: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, outcome: _Optional[_Union[StoreOutcome, str]] = ..., kzg_key: _Optional[str] = ..., tier: _Optional[_Union[Tier, str]] = ..., salienz: _Optional[float] = ..., ttl_seconds: _Optional[int] = ..., queued_for_promotion: _Optional[bool] = ..., reinforced_count: _Optional[int] = ..., reinforced_queued_count: _Optional[int] = ..., canon_rejections: _Optional[_Iterable[str]] = ...) -> None: ...

class StoreEntriesRequest(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[StoreEntryRequest]
    def __init__(self, entries: _Optional[_Iterable[_Union[StoreEntryRequest, _Mapping]]] = ...) -> None: ...

class StoreEntriesResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[StoreEntryResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[StoreEntryResponse, _Mapping]]] = ...) -> None: ...

class AppendSessionTurnsRequest(_message.Message):
    __slots__ = ("appends",)
    APPENDS_FIELD_NUMBER: _ClassVar[int]
    appends: _containers.RepeatedCompositeFieldContainer[AppendSessionTurnRequest]
    def __init__(self, appends: _Optional[_Iterable[_Union[AppendSessionTurnRequest, _Mapping]]] = ...) -> None: ...

class AppendSessionTurnsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AppendSessionTurnResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[AppendSessionTurnResponse, _Mapping]]] = ...) -> None: ...

class RetrieveFilters(_message.Message):
    __slots__ = ("emotion", "modus", "entitaet_ids", "themen", "timeline_id", "min_salienz")
    EMOTION_FIELD_NUMBER: _ClassVar[int]
    MODUS_FIELD_NUMBER: _ClassVar[int]
    ENTITAET_IDS_FIELD_NUMBER: _ClassVar[int]
    THEMEN_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_ID_FIELD_NUMBER: _ClassVar[int]
    MIN_SALIENZ_FIELD_NUMBER: _ClassVar[int]
    emotion: _containers.RepeatedScalarFieldContainer[str]
    modus: _containers.RepeatedScalarFieldContainer[str]
    entitaet_ids: _containers.RepeatedScalarFieldContainer[int]
    themen: _containers.RepeatedScalarFieldContainer[str]
    timeline_id: int
    min_salienz: float
    def __init__(self, emotion: _Optional[_Iterable[str]] = ..., modus: _Optional[_Iterable[str]] = ..., entitaet_ids: _Optional[_Iterable[int]] = ..., themen: _Optional[_Iterable[str]] = ..., timeline_id: _Optional[int] = ..., min_salienz: _Optional[float] = ...) -> None: ...

class RetrieveRequest(_message.Message):
    __slots__ = ("pair", "query_text", "query_vector", "beobachter", "filters", "top_k", "turn", "as_of", "lexical_text", "question_entity_ids", "sprache", "full_entries", "zeitfenster")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    QUERY_TEXT_FIELD_NUMBER: _ClassVar[int]
    QUERY_VECTOR_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    FILTERS_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_TEXT_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ENTITY_IDS_FIELD_NUMBER: _ClassVar[int]
    SPRACHE_FIELD_NUMBER: _ClassVar[int]
    FULL_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    ZEITFENSTER_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    query_text: str
    query_vector: QueryVector
    beobachter: _common_pb2.Beobachter
    filters: RetrieveFilters
    top_k: int
    turn: _common_pb2.TurnContext
    as_of: _timestamp_pb2.Timestamp
    lexical_text: str
    question_entity_ids: _containers.RepeatedScalarFieldContainer[int]
    sprache: str
    full_entries: int
    zeitfenster: _containers.RepeatedCompositeFieldContainer[_common_pb2.Zeitfenster]
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., query_text: _Optional[str] = ..., query_vector: _Optional[_Union[QueryVector, _Mapping]] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., filters: _Optional[_Union[RetrieveFilters, _Mapping]] = ..., top_k: _Optional[int] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lexical_text: _Optional[str] = ..., question_entity_ids: _Optional[_Iterable[int]] = ..., sprache: _Optional[str] = ..., full_entries: _Optional[int] = ..., zeitfenster: _Optional[_Iterable[_Union[_common_pb2.Zeitfenster, _Mapping]]] = ...) -> None: ...

class QueryVector(_message.Message):
    __slots__ = ("values", "model_id")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    model_id: str
    def __init__(self, values: _Optional[_Iterable[float]] = ..., model_id: _Optional[str] = ...) -> None: ...

class RetrieveHit(_message.Message):
    __slots__ = ("entry", "similarity", "quellen", "brief")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    QUELLEN_FIELD_NUMBER: _ClassVar[int]
    BRIEF_FIELD_NUMBER: _ClassVar[int]
    entry: _common_pb2.KzgEntry
    similarity: float
    quellen: _containers.RepeatedScalarFieldContainer[str]
    brief: bool
    def __init__(self, entry: _Optional[_Union[_common_pb2.KzgEntry, _Mapping]] = ..., similarity: _Optional[float] = ..., quellen: _Optional[_Iterable[str]] = ..., brief: _Optional[bool] = ...) -> None: ...

class RetrieveResponse(_message.Message):
    __slots__ = ("hits", "threshold", "model_id", "dropped_below_threshold")
    HITS_FIELD_NUMBER: _ClassVar[int]
    THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DROPPED_BELOW_THRESHOLD_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[RetrieveHit]
    threshold: float
    model_id: str
    dropped_below_threshold: int
    def __init__(self, hits: _Optional[_Iterable[_Union[RetrieveHit, _Mapping]]] = ..., threshold: _Optional[float] = ..., model_id: _Optional[str] = ..., dropped_below_threshold: _Optional[int] = ...) -> None: ...

class GetEntryRequest(_message.Message):
    __slots__ = ("pair", "kzg_key", "include_embedding", "turn", "as_of")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    kzg_key: str
    include_embedding: bool
    turn: _common_pb2.TurnContext
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., kzg_key: _Optional[str] = ..., include_embedding: _Optional[bool] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetEntryResponse(_message.Message):
    __slots__ = ("entry",)
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    entry: _common_pb2.KzgEntry
    def __init__(self, entry: _Optional[_Union[_common_pb2.KzgEntry, _Mapping]] = ...) -> None: ...

class DeleteEntryRequest(_message.Message):
    __slots__ = ("pair", "kzg_key", "turn", "hash_dirty_reason", "as_of")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    HASH_DIRTY_REASON_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    kzg_key: str
    turn: _common_pb2.TurnContext
    hash_dirty_reason: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., kzg_key: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., hash_dirty_reason: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeleteEntryResponse(_message.Message):
    __slots__ = ("deleted", "verified_gone", "hash_dirty_set")
    DELETED_FIELD_NUMBER: _ClassVar[int]
    VERIFIED_GONE_FIELD_NUMBER: _ClassVar[int]
    HASH_DIRTY_SET_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    verified_gone: bool
    hash_dirty_set: bool
    def __init__(self, deleted: _Optional[bool] = ..., verified_gone: _Optional[bool] = ..., hash_dirty_set: _Optional[bool] = ...) -> None: ...

class MarkHashDirtyRequest(_message.Message):
    __slots__ = ("pair", "reason", "as_of")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    reason: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., reason: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MarkHashDirtyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PromotionJob(_message.Message):
    __slots__ = ("job_id", "kzg_key", "ausloeser_turn_id", "pair", "delivery_count", "ausgeloest_am")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    AUSLOESER_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_COUNT_FIELD_NUMBER: _ClassVar[int]
    AUSGELOEST_AM_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    kzg_key: str
    ausloeser_turn_id: str
    pair: _common_pb2.Pair
    delivery_count: int
    ausgeloest_am: _timestamp_pb2.Timestamp
    def __init__(self, job_id: _Optional[str] = ..., kzg_key: _Optional[str] = ..., ausloeser_turn_id: _Optional[str] = ..., pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., delivery_count: _Optional[int] = ..., ausgeloest_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReadPromotionJobsRequest(_message.Message):
    __slots__ = ("consumer", "count", "block_ms", "reclaim_idle_ms")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    BLOCK_MS_FIELD_NUMBER: _ClassVar[int]
    RECLAIM_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    count: int
    block_ms: int
    reclaim_idle_ms: int
    def __init__(self, consumer: _Optional[str] = ..., count: _Optional[int] = ..., block_ms: _Optional[int] = ..., reclaim_idle_ms: _Optional[int] = ...) -> None: ...

class ReadPromotionJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[PromotionJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[PromotionJob, _Mapping]]] = ...) -> None: ...

class AckPromotionJobsRequest(_message.Message):
    __slots__ = ("job_ids",)
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class AckPromotionJobsResponse(_message.Message):
    __slots__ = ("acked",)
    ACKED_FIELD_NUMBER: _ClassVar[int]
    acked: int
    def __init__(self, acked: _Optional[int] = ...) -> None: ...

class InspectPromotionQueueRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class InspectPromotionQueueResponse(_message.Message):
    __slots__ = ("length", "pending", "consumers", "pending_jobs")
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    PENDING_JOBS_FIELD_NUMBER: _ClassVar[int]
    length: int
    pending: int
    consumers: _containers.RepeatedScalarFieldContainer[str]
    pending_jobs: _containers.RepeatedCompositeFieldContainer[PromotionJob]
    def __init__(self, length: _Optional[int] = ..., pending: _Optional[int] = ..., consumers: _Optional[_Iterable[str]] = ..., pending_jobs: _Optional[_Iterable[_Union[PromotionJob, _Mapping]]] = ...) -> None: ...

class EraseRequest(_message.Message):
    __slots__ = ("target",)
    TARGET_FIELD_NUMBER: _ClassVar[int]
    target: _common_pb2.ErasureTarget
    def __init__(self, target: _Optional[_Union[_common_pb2.ErasureTarget, _Mapping]] = ...) -> None: ...

class EraseResponse(_message.Message):
    __slots__ = ("entries", "session_keys", "hash_dirty", "cluster_keys", "queue_jobs", "stream_cutoff", "characters", "profile_keys")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    SESSION_KEYS_FIELD_NUMBER: _ClassVar[int]
    HASH_DIRTY_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_KEYS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_JOBS_FIELD_NUMBER: _ClassVar[int]
    STREAM_CUTOFF_FIELD_NUMBER: _ClassVar[int]
    CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_KEYS_FIELD_NUMBER: _ClassVar[int]
    entries: int
    session_keys: int
    hash_dirty: int
    cluster_keys: int
    queue_jobs: int
    stream_cutoff: str
    characters: int
    profile_keys: int
    def __init__(self, entries: _Optional[int] = ..., session_keys: _Optional[int] = ..., hash_dirty: _Optional[int] = ..., cluster_keys: _Optional[int] = ..., queue_jobs: _Optional[int] = ..., stream_cutoff: _Optional[str] = ..., characters: _Optional[int] = ..., profile_keys: _Optional[int] = ...) -> None: ...

class ExportPairRequest(_message.Message):
    __slots__ = ("pair",)
    PAIR_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ...) -> None: ...

class ExportedEntry(_message.Message):
    __slots__ = ("entry", "promotion_queued")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    PROMOTION_QUEUED_FIELD_NUMBER: _ClassVar[int]
    entry: _common_pb2.KzgEntry
    promotion_queued: bool
    def __init__(self, entry: _Optional[_Union[_common_pb2.KzgEntry, _Mapping]] = ..., promotion_queued: _Optional[bool] = ...) -> None: ...

class ExportPairResponse(_message.Message):
    __slots__ = ("entries", "session_turns", "session_summary", "session_ttl_seconds", "profile")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    SESSION_TURNS_FIELD_NUMBER: _ClassVar[int]
    SESSION_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    SESSION_TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ExportedEntry]
    session_turns: _containers.RepeatedCompositeFieldContainer[SessionTurn]
    session_summary: str
    session_ttl_seconds: int
    profile: _common_pb2.PairProfile
    def __init__(self, entries: _Optional[_Iterable[_Union[ExportedEntry, _Mapping]]] = ..., session_turns: _Optional[_Iterable[_Union[SessionTurn, _Mapping]]] = ..., session_summary: _Optional[str] = ..., session_ttl_seconds: _Optional[int] = ..., profile: _Optional[_Union[_common_pb2.PairProfile, _Mapping]] = ...) -> None: ...

class ImportPairRequest(_message.Message):
    __slots__ = ("pair", "entries", "session_turns", "session_summary", "validate_only", "profile")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    SESSION_TURNS_FIELD_NUMBER: _ClassVar[int]
    SESSION_SUMMARY_FIELD_NUMBER: _ClassVar[int]
    VALIDATE_ONLY_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    entries: _containers.RepeatedCompositeFieldContainer[ExportedEntry]
    session_turns: _containers.RepeatedCompositeFieldContainer[SessionTurn]
    session_summary: str
    validate_only: bool
    profile: _common_pb2.PairProfile
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., entries: _Optional[_Iterable[_Union[ExportedEntry, _Mapping]]] = ..., session_turns: _Optional[_Iterable[_Union[SessionTurn, _Mapping]]] = ..., session_summary: _Optional[str] = ..., validate_only: _Optional[bool] = ..., profile: _Optional[_Union[_common_pb2.PairProfile, _Mapping]] = ...) -> None: ...

class ImportPairResponse(_message.Message):
    __slots__ = ("entries", "queued", "session_turns", "skipped_expired", "profile")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    SESSION_TURNS_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    entries: int
    queued: int
    session_turns: int
    skipped_expired: int
    profile: int
    def __init__(self, entries: _Optional[int] = ..., queued: _Optional[int] = ..., session_turns: _Optional[int] = ..., skipped_expired: _Optional[int] = ..., profile: _Optional[int] = ...) -> None: ...

class ForgetEntriesRequest(_message.Message):
    __slots__ = ("pair", "kzg_keys", "source_turn_id", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    KZG_KEYS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    kzg_keys: _containers.RepeatedScalarFieldContainer[str]
    source_turn_id: str
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., kzg_keys: _Optional[_Iterable[str]] = ..., source_turn_id: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class ForgetEntriesResponse(_message.Message):
    __slots__ = ("deleted_keys", "session_turns_removed")
    DELETED_KEYS_FIELD_NUMBER: _ClassVar[int]
    SESSION_TURNS_REMOVED_FIELD_NUMBER: _ClassVar[int]
    deleted_keys: _containers.RepeatedScalarFieldContainer[str]
    session_turns_removed: int
    def __init__(self, deleted_keys: _Optional[_Iterable[str]] = ..., session_turns_removed: _Optional[int] = ...) -> None: ...

class CorrectEntryRequest(_message.Message):
    __slots__ = ("pair", "kzg_key", "inhalt", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    kzg_key: str
    inhalt: str
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., kzg_key: _Optional[str] = ..., inhalt: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class CorrectEntryResponse(_message.Message):
    __slots__ = ("previous_inhalt",)
    PREVIOUS_INHALT_FIELD_NUMBER: _ClassVar[int]
    previous_inhalt: str
    def __init__(self, previous_inhalt: _Optional[str] = ...) -> None: ...

class EnqueuePromotionJobsRequest(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[PromotionJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[PromotionJob, _Mapping]]] = ...) -> None: ...

class EnqueuePromotionJobsResponse(_message.Message):
    __slots__ = ("job_ids", "enqueued", "gone")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_FIELD_NUMBER: _ClassVar[int]
    GONE_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    enqueued: int
    gone: int
    def __init__(self, job_ids: _Optional[_Iterable[str]] = ..., enqueued: _Optional[int] = ..., gone: _Optional[int] = ...) -> None: ...
