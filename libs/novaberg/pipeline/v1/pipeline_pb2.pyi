import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from novaberg.common.v1 import common_pb2 as _common_pb2
from novaberg.kzg.v1 import kzg_pb2 as _kzg_pb2
from novaberg.lzg.v1 import lzg_pb2 as _lzg_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TurnAnalysis(_message.Message):
    __slots__ = ("salience", "ei", "magnets", "inhalt")
    SALIENCE_FIELD_NUMBER: _ClassVar[int]
    EI_FIELD_NUMBER: _ClassVar[int]
    MAGNETS_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    salience: _common_pb2.SalienceResult
    ei: _common_pb2.EiFields
    magnets: _common_pb2.Magnets
    inhalt: str
    def __init__(self, salience: _Optional[_Union[_common_pb2.SalienceResult, _Mapping]] = ..., ei: _Optional[_Union[_common_pb2.EiFields, _Mapping]] = ..., magnets: _Optional[_Union[_common_pb2.Magnets, _Mapping]] = ..., inhalt: _Optional[str] = ...) -> None: ...

class ObserveTurnRequest(_message.Message):
    __slots__ = ("pair", "turn_id", "beobachter", "text", "analysis", "as_of", "profile")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    turn_id: str
    beobachter: _common_pb2.Beobachter
    text: str
    analysis: TurnAnalysis
    as_of: _timestamp_pb2.Timestamp
    profile: _common_pb2.PairProfile
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., turn_id: _Optional[str] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., text: _Optional[str] = ..., analysis: _Optional[_Union[TurnAnalysis, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., profile: _Optional[_Union[_common_pb2.PairProfile, _Mapping]] = ...) -> None: ...

class ObserveTurnResponse(_message.Message):
    __slots__ = ("kzg", "analysis", "analyzed_by_service", "session_turn_count", "fehler", "repeated")
    KZG_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    ANALYZED_BY_SERVICE_FIELD_NUMBER: _ClassVar[int]
    SESSION_TURN_COUNT_FIELD_NUMBER: _ClassVar[int]
    FEHLER_FIELD_NUMBER: _ClassVar[int]
    REPEATED_FIELD_NUMBER: _ClassVar[int]
    kzg: _kzg_pb2.StoreEntryResponse
    analysis: TurnAnalysis
    analyzed_by_service: bool
    session_turn_count: int
    fehler: _containers.RepeatedScalarFieldContainer[str]
    repeated: bool
    def __init__(self, kzg: _Optional[_Union[_kzg_pb2.StoreEntryResponse, _Mapping]] = ..., analysis: _Optional[_Union[TurnAnalysis, _Mapping]] = ..., analyzed_by_service: _Optional[bool] = ..., session_turn_count: _Optional[int] = ..., fehler: _Optional[_Iterable[str]] = ..., repeated: _Optional[bool] = ...) -> None: ...

class ObservedTurn(_message.Message):
    __slots__ = ("turn_id", "beobachter", "text", "analysis", "as_of")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    beobachter: _common_pb2.Beobachter
    text: str
    analysis: TurnAnalysis
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, turn_id: _Optional[str] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., text: _Optional[str] = ..., analysis: _Optional[_Union[TurnAnalysis, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ObserveTurnsRequest(_message.Message):
    __slots__ = ("pair", "turns", "profile")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TURNS_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    turns: _containers.RepeatedCompositeFieldContainer[ObservedTurn]
    profile: _common_pb2.PairProfile
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., turns: _Optional[_Iterable[_Union[ObservedTurn, _Mapping]]] = ..., profile: _Optional[_Union[_common_pb2.PairProfile, _Mapping]] = ...) -> None: ...

class ObserveTurnsResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ObserveTurnResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[ObserveTurnResponse, _Mapping]]] = ...) -> None: ...

class ActivatedGoal(_message.Message):
    __slots__ = ("embedding", "aktivierungs_staerke")
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    AKTIVIERUNGS_STAERKE_FIELD_NUMBER: _ClassVar[int]
    embedding: _containers.RepeatedScalarFieldContainer[float]
    aktivierungs_staerke: float
    def __init__(self, embedding: _Optional[_Iterable[float]] = ..., aktivierungs_staerke: _Optional[float] = ...) -> None: ...

class BuildDossierRequest(_message.Message):
    __slots__ = ("pair", "turn_id", "query_text", "intentionen", "goals", "nova_emotion", "readers", "user_name", "character_name", "include_vectors", "as_of", "recall_k")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_TEXT_FIELD_NUMBER: _ClassVar[int]
    INTENTIONEN_FIELD_NUMBER: _ClassVar[int]
    GOALS_FIELD_NUMBER: _ClassVar[int]
    NOVA_EMOTION_FIELD_NUMBER: _ClassVar[int]
    READERS_FIELD_NUMBER: _ClassVar[int]
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_VECTORS_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    RECALL_K_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    turn_id: str
    query_text: str
    intentionen: _containers.RepeatedScalarFieldContainer[str]
    goals: _containers.RepeatedCompositeFieldContainer[ActivatedGoal]
    nova_emotion: str
    readers: _containers.RepeatedScalarFieldContainer[str]
    user_name: str
    character_name: str
    include_vectors: bool
    as_of: _timestamp_pb2.Timestamp
    recall_k: int
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., turn_id: _Optional[str] = ..., query_text: _Optional[str] = ..., intentionen: _Optional[_Iterable[str]] = ..., goals: _Optional[_Iterable[_Union[ActivatedGoal, _Mapping]]] = ..., nova_emotion: _Optional[str] = ..., readers: _Optional[_Iterable[str]] = ..., user_name: _Optional[str] = ..., character_name: _Optional[str] = ..., include_vectors: _Optional[bool] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., recall_k: _Optional[int] = ...) -> None: ...

class RecallItem(_message.Message):
    __slots__ = ("layer", "beobachter", "speaker", "zeitpunkt", "score", "inhalt", "turn_id", "kzg_key", "knoten_id", "schale", "pfad", "quellen", "antwort_auf")
    LAYER_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    SPEAKER_FIELD_NUMBER: _ClassVar[int]
    ZEITPUNKT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    KNOTEN_ID_FIELD_NUMBER: _ClassVar[int]
    SCHALE_FIELD_NUMBER: _ClassVar[int]
    PFAD_FIELD_NUMBER: _ClassVar[int]
    QUELLEN_FIELD_NUMBER: _ClassVar[int]
    ANTWORT_AUF_FIELD_NUMBER: _ClassVar[int]
    layer: str
    beobachter: _common_pb2.Beobachter
    speaker: str
    zeitpunkt: _timestamp_pb2.Timestamp
    score: float
    inhalt: str
    turn_id: str
    kzg_key: str
    knoten_id: int
    schale: int
    pfad: _containers.RepeatedCompositeFieldContainer[_lzg_pb2.PfadSchritt]
    quellen: _containers.RepeatedScalarFieldContainer[str]
    antwort_auf: str
    def __init__(self, layer: _Optional[str] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., speaker: _Optional[str] = ..., zeitpunkt: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., score: _Optional[float] = ..., inhalt: _Optional[str] = ..., turn_id: _Optional[str] = ..., kzg_key: _Optional[str] = ..., knoten_id: _Optional[int] = ..., schale: _Optional[int] = ..., pfad: _Optional[_Iterable[_Union[_lzg_pb2.PfadSchritt, _Mapping]]] = ..., quellen: _Optional[_Iterable[str]] = ..., antwort_auf: _Optional[str] = ...) -> None: ...

class WeightedKzgHit(_message.Message):
    __slots__ = ("hit", "weight", "score")
    HIT_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    hit: _kzg_pb2.RetrieveHit
    weight: float
    score: float
    def __init__(self, hit: _Optional[_Union[_kzg_pb2.RetrieveHit, _Mapping]] = ..., weight: _Optional[float] = ..., score: _Optional[float] = ...) -> None: ...

class BuildDossierResponse(_message.Message):
    __slots__ = ("cluster", "gravitation_faktor", "kzg_hits", "lzg_resonanz", "memory_blocks", "served_node_ids", "query_vector", "search_vector", "memory_ms", "model_ms", "recall", "fehler")
    class MemoryBlocksEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    GRAVITATION_FAKTOR_FIELD_NUMBER: _ClassVar[int]
    KZG_HITS_FIELD_NUMBER: _ClassVar[int]
    LZG_RESONANZ_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    SERVED_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    QUERY_VECTOR_FIELD_NUMBER: _ClassVar[int]
    SEARCH_VECTOR_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MS_FIELD_NUMBER: _ClassVar[int]
    MODEL_MS_FIELD_NUMBER: _ClassVar[int]
    RECALL_FIELD_NUMBER: _ClassVar[int]
    FEHLER_FIELD_NUMBER: _ClassVar[int]
    cluster: str
    gravitation_faktor: float
    kzg_hits: _containers.RepeatedCompositeFieldContainer[WeightedKzgHit]
    lzg_resonanz: _lzg_pb2.LzgResonanz
    memory_blocks: _containers.ScalarMap[str, str]
    served_node_ids: _containers.RepeatedScalarFieldContainer[int]
    query_vector: _containers.RepeatedScalarFieldContainer[float]
    search_vector: _containers.RepeatedScalarFieldContainer[float]
    memory_ms: float
    model_ms: float
    recall: _containers.RepeatedCompositeFieldContainer[RecallItem]
    fehler: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, cluster: _Optional[str] = ..., gravitation_faktor: _Optional[float] = ..., kzg_hits: _Optional[_Iterable[_Union[WeightedKzgHit, _Mapping]]] = ..., lzg_resonanz: _Optional[_Union[_lzg_pb2.LzgResonanz, _Mapping]] = ..., memory_blocks: _Optional[_Mapping[str, str]] = ..., served_node_ids: _Optional[_Iterable[int]] = ..., query_vector: _Optional[_Iterable[float]] = ..., search_vector: _Optional[_Iterable[float]] = ..., memory_ms: _Optional[float] = ..., model_ms: _Optional[float] = ..., recall: _Optional[_Iterable[_Union[RecallItem, _Mapping]]] = ..., fehler: _Optional[_Iterable[str]] = ...) -> None: ...

class DispatchRequest(_message.Message):
    __slots__ = ("pair", "turn_id", "user_prompt", "answer_text", "cluster", "served_node_ids", "answer_analysis", "user_emotion_json", "nova_emotion_json", "as_of")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    USER_PROMPT_FIELD_NUMBER: _ClassVar[int]
    ANSWER_TEXT_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    SERVED_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    ANSWER_ANALYSIS_FIELD_NUMBER: _ClassVar[int]
    USER_EMOTION_JSON_FIELD_NUMBER: _ClassVar[int]
    NOVA_EMOTION_JSON_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    turn_id: str
    user_prompt: str
    answer_text: str
    cluster: str
    served_node_ids: _containers.RepeatedScalarFieldContainer[int]
    answer_analysis: TurnAnalysis
    user_emotion_json: str
    nova_emotion_json: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., turn_id: _Optional[str] = ..., user_prompt: _Optional[str] = ..., answer_text: _Optional[str] = ..., cluster: _Optional[str] = ..., served_node_ids: _Optional[_Iterable[int]] = ..., answer_analysis: _Optional[_Union[TurnAnalysis, _Mapping]] = ..., user_emotion_json: _Optional[str] = ..., nova_emotion_json: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DispatchResponse(_message.Message):
    __slots__ = ("protokoll", "kzg", "cluster_persisted", "fehler")
    PROTOKOLL_FIELD_NUMBER: _ClassVar[int]
    KZG_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_PERSISTED_FIELD_NUMBER: _ClassVar[int]
    FEHLER_FIELD_NUMBER: _ClassVar[int]
    protokoll: _lzg_pb2.VerwendungsProtokoll
    kzg: _kzg_pb2.StoreEntryResponse
    cluster_persisted: str
    fehler: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protokoll: _Optional[_Union[_lzg_pb2.VerwendungsProtokoll, _Mapping]] = ..., kzg: _Optional[_Union[_kzg_pb2.StoreEntryResponse, _Mapping]] = ..., cluster_persisted: _Optional[str] = ..., fehler: _Optional[_Iterable[str]] = ...) -> None: ...
