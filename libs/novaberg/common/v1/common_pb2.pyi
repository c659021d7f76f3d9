import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Beobachter(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BEOBACHTER_UNSPECIFIED: _ClassVar[Beobachter]
    BEOBACHTER_USER: _ClassVar[Beobachter]
    BEOBACHTER_ASSISTANT: _ClassVar[Beobachter]

class PromotionOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROMOTION_OUTCOME_UNSPECIFIED: _ClassVar[PromotionOutcome]
    PROMOTION_OUTCOME_NEW_NODE: _ClassVar[PromotionOutcome]
    PROMOTION_OUTCOME_DUPLICATE: _ClassVar[PromotionOutcome]
    PROMOTION_OUTCOME_HALF_REACTIVATION: _ClassVar[PromotionOutcome]
    PROMOTION_OUTCOME_EXPIRED: _ClassVar[PromotionOutcome]
    PROMOTION_OUTCOME_ERASED: _ClassVar[PromotionOutcome]
BEOBACHTER_UNSPECIFIED: Beobachter
BEOBACHTER_USER: Beobachter
BEOBACHTER_ASSISTANT: Beobachter
PROMOTION_OUTCOME_UNSPECIFIED: PromotionOutcome
PROMOTION_OUTCOME_NEW_NODE: PromotionOutcome
PROMOTION_OUTCOME_DUPLICATE: PromotionOutcome
PROMOTION_OUTCOME_HALF_REACTIVATION: PromotionOutcome
PROMOTION_OUTCOME_EXPIRED: PromotionOutcome
PROMOTION_OUTCOME_ERASED: PromotionOutcome

class Pair(_message.Message):
    __slots__ = ("user_id", "character_id")
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_ID_FIELD_NUMBER: _ClassVar[int]
    user_id: str
    character_id: str
    def __init__(self, user_id: _Optional[str] = ..., character_id: _Optional[str] = ...) -> None: ...

class EiFields(_message.Message):
    __slots__ = ("emotion", "modus", "arousal", "emotions_vektor", "sprach_stil", "beziehungs_dynamik", "tone", "intentionen")
    EMOTION_FIELD_NUMBER: _ClassVar[int]
    MODUS_FIELD_NUMBER: _ClassVar[int]
    AROUSAL_FIELD_NUMBER: _ClassVar[int]
    EMOTIONS_VEKTOR_FIELD_NUMBER: _ClassVar[int]
    SPRACH_STIL_FIELD_NUMBER: _ClassVar[int]
    BEZIEHUNGS_DYNAMIK_FIELD_NUMBER: _ClassVar[int]
    TONE_FIELD_NUMBER: _ClassVar[int]
    INTENTIONEN_FIELD_NUMBER: _ClassVar[int]
    emotion: str
    modus: str
    arousal: float
    emotions_vektor: str
    sprach_stil: str
    beziehungs_dynamik: str
    tone: str
    intentionen: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, emotion: _Optional[str] = ..., modus: _Optional[str] = ..., arousal: _Optional[float] = ..., emotions_vektor: _Optional[str] = ..., sprach_stil: _Optional[str] = ..., beziehungs_dynamik: _Optional[str] = ..., tone: _Optional[str] = ..., intentionen: _Optional[_Iterable[str]] = ...) -> None: ...

class SalienceResult(_message.Message):
    __slots__ = ("salienz", "themen", "gedaechtnistyp", "dimension")
    SALIENZ_FIELD_NUMBER: _ClassVar[int]
    THEMEN_FIELD_NUMBER: _ClassVar[int]
    GEDAECHTNISTYP_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    salienz: float
    themen: _containers.RepeatedScalarFieldContainer[str]
    gedaechtnistyp: str
    dimension: str
    def __init__(self, salienz: _Optional[float] = ..., themen: _Optional[_Iterable[str]] = ..., gedaechtnistyp: _Optional[str] = ..., dimension: _Optional[str] = ...) -> None: ...

class Magnets(_message.Message):
    __slots__ = ("entitaet_ids", "timeline_id")
    ENTITAET_IDS_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_ID_FIELD_NUMBER: _ClassVar[int]
    entitaet_ids: _containers.RepeatedScalarFieldContainer[int]
    timeline_id: int
    def __init__(self, entitaet_ids: _Optional[_Iterable[int]] = ..., timeline_id: _Optional[int] = ...) -> None: ...

class TurnContext(_message.Message):
    __slots__ = ("turn_id", "span_id")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SPAN_ID_FIELD_NUMBER: _ClassVar[int]
    turn_id: str
    span_id: str
    def __init__(self, turn_id: _Optional[str] = ..., span_id: _Optional[str] = ...) -> None: ...

class KzgEntry(_message.Message):
    __slots__ = ("kzg_key", "entry_id", "pair", "beobachter", "inhalt", "themen", "salienz", "salienz_eingang", "salienz_eingang_herkunft", "haeufigkeit", "gedaechtnistyp", "dimension", "ei", "magnets", "erstellt_am", "turn_id", "ttl_seconds", "embedding", "sprecher", "sprache", "ablauf_am", "traceparent", "antwort_auf")
    KZG_KEY_FIELD_NUMBER: _ClassVar[int]
    ENTRY_ID_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    THEMEN_FIELD_NUMBER: _ClassVar[int]
    SALIENZ_FIELD_NUMBER: _ClassVar[int]
    SALIENZ_EINGANG_FIELD_NUMBER: _ClassVar[int]
    SALIENZ_EINGANG_HERKUNFT_FIELD_NUMBER: _ClassVar[int]
    HAEUFIGKEIT_FIELD_NUMBER: _ClassVar[int]
    GEDAECHTNISTYP_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    EI_FIELD_NUMBER: _ClassVar[int]
    MAGNETS_FIELD_NUMBER: _ClassVar[int]
    ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    SPRECHER_FIELD_NUMBER: _ClassVar[int]
    SPRACHE_FIELD_NUMBER: _ClassVar[int]
    ABLAUF_AM_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    ANTWORT_AUF_FIELD_NUMBER: _ClassVar[int]
    kzg_key: str
    entry_id: str
    pair: Pair
    beobachter: Beobachter
    inhalt: str
    themen: _containers.RepeatedScalarFieldContainer[str]
    salienz: float
    salienz_eingang: float
    salienz_eingang_herkunft: str
    haeufigkeit: int
    gedaechtnistyp: str
    dimension: str
    ei: EiFields
    magnets: Magnets
    erstellt_am: _timestamp_pb2.Timestamp
    turn_id: str
    ttl_seconds: int
    embedding: _containers.RepeatedScalarFieldContainer[float]
    sprecher: str
    sprache: str
    ablauf_am: _timestamp_pb2.Timestamp
    traceparent: str
    antwort_auf: str
    def __init__(self, kzg_key: _Optional[str] = ..., entry_id: _Optional[str] = ..., pair: _Optional[_Union[Pair, _Mapping]] = ..., beobachter: _Optional[_Union[Beobachter, str]] = ..., inhalt: _Optional[str] = ..., themen: _Optional[_Iterable[str]] = ..., salienz: _Optional[float] = ..., salienz_eingang: _Optional[float] = ..., salienz_eingang_herkunft: _Optional[str] = ..., haeufigkeit: _Optional[int] = ..., gedaechtnistyp: _Optional[str] = ..., dimension: _Optional[str] = ..., ei: _Optional[_Union[EiFields, _Mapping]] = ..., magnets: _Optional[_Union[Magnets, _Mapping]] = ..., erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ..., ttl_seconds: _Optional[int] = ..., embedding: _Optional[_Iterable[float]] = ..., sprecher: _Optional[str] = ..., sprache: _Optional[str] = ..., ablauf_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., traceparent: _Optional[str] = ..., antwort_auf: _Optional[str] = ...) -> None: ...

class ModelInfo(_message.Message):
    __slots__ = ("model_id", "dimension", "recipe")
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    RECIPE_FIELD_NUMBER: _ClassVar[int]
    model_id: str
    dimension: int
    recipe: str
    def __init__(self, model_id: _Optional[str] = ..., dimension: _Optional[int] = ..., recipe: _Optional[str] = ...) -> None: ...

class GetModelRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PairProfile(_message.Message):
    __slots__ = ("user_name", "character_name", "sprache", "zeitzone")
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_NAME_FIELD_NUMBER: _ClassVar[int]
    SPRACHE_FIELD_NUMBER: _ClassVar[int]
    ZEITZONE_FIELD_NUMBER: _ClassVar[int]
    user_name: str
    character_name: str
    sprache: str
    zeitzone: str
    def __init__(self, user_name: _Optional[str] = ..., character_name: _Optional[str] = ..., sprache: _Optional[str] = ..., zeitzone: _Optional[str] = ...) -> None: ...

class ErasureTarget(_message.Message):
    __slots__ = ("pair", "user_id")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    pair: Pair
    user_id: str
    def __init__(self, pair: _Optional[_Union[Pair, _Mapping]] = ..., user_id: _Optional[str] = ...) -> None: ...

class Zeitfenster(_message.Message):
    __slots__ = ("zeitpunkt", "praezision")
    ZEITPUNKT_FIELD_NUMBER: _ClassVar[int]
    PRAEZISION_FIELD_NUMBER: _ClassVar[int]
    zeitpunkt: _timestamp_pb2.Timestamp
    praezision: str
    def __init__(self, zeitpunkt: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., praezision: _Optional[str] = ...) -> None: ...
