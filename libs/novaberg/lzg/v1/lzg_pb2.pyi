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

class VerwendungAusgang(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERWENDUNG_AUSGANG_UNSPECIFIED: _ClassVar[VerwendungAusgang]
    VERWENDUNG_AUSGANG_GERECHNET: _ClassVar[VerwendungAusgang]
    VERWENDUNG_AUSGANG_ANTWORT_LEER: _ClassVar[VerwendungAusgang]
    VERWENDUNG_AUSGANG_OHNE_KANDIDAT: _ClassVar[VerwendungAusgang]
    VERWENDUNG_AUSGANG_EMBED_FEHLER: _ClassVar[VerwendungAusgang]
    VERWENDUNG_AUSGANG_VEKTOR_LEER: _ClassVar[VerwendungAusgang]
    VERWENDUNG_AUSGANG_DB_FEHLER: _ClassVar[VerwendungAusgang]
VERWENDUNG_AUSGANG_UNSPECIFIED: VerwendungAusgang
VERWENDUNG_AUSGANG_GERECHNET: VerwendungAusgang
VERWENDUNG_AUSGANG_ANTWORT_LEER: VerwendungAusgang
VERWENDUNG_AUSGANG_OHNE_KANDIDAT: VerwendungAusgang
VERWENDUNG_AUSGANG_EMBED_FEHLER: VerwendungAusgang
VERWENDUNG_AUSGANG_VEKTOR_LEER: VerwendungAusgang
VERWENDUNG_AUSGANG_DB_FEHLER: VerwendungAusgang

class CheckNodesRequest(_message.Message):
    __slots__ = ("pair", "node_ids")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CheckNodesResponse(_message.Message):
    __slots__ = ("missing",)
    MISSING_FIELD_NUMBER: _ClassVar[int]
    missing: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, missing: _Optional[_Iterable[int]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("id", "kzg_quell_key", "pair", "beobachter", "inhalt", "dimension", "gewicht_roh", "gewicht_absolut", "gewicht_decay", "haeufigkeit", "aktiv", "erstellt_am", "verstaerkt_am", "decay_am", "kzg_erstellt_am", "themen", "gedaechtnistyp", "magnets", "ei", "embedding", "sprecher", "sprache", "quell_turn_id", "antwort_auf")
    ID_FIELD_NUMBER: _ClassVar[int]
    KZG_QUELL_KEY_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    DIMENSION_FIELD_NUMBER: _ClassVar[int]
    GEWICHT_ROH_FIELD_NUMBER: _ClassVar[int]
    GEWICHT_ABSOLUT_FIELD_NUMBER: _ClassVar[int]
    GEWICHT_DECAY_FIELD_NUMBER: _ClassVar[int]
    HAEUFIGKEIT_FIELD_NUMBER: _ClassVar[int]
    AKTIV_FIELD_NUMBER: _ClassVar[int]
    ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    VERSTAERKT_AM_FIELD_NUMBER: _ClassVar[int]
    DECAY_AM_FIELD_NUMBER: _ClassVar[int]
    KZG_ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    THEMEN_FIELD_NUMBER: _ClassVar[int]
    GEDAECHTNISTYP_FIELD_NUMBER: _ClassVar[int]
    MAGNETS_FIELD_NUMBER: _ClassVar[int]
    EI_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    SPRECHER_FIELD_NUMBER: _ClassVar[int]
    SPRACHE_FIELD_NUMBER: _ClassVar[int]
    QUELL_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    ANTWORT_AUF_FIELD_NUMBER: _ClassVar[int]
    id: int
    kzg_quell_key: str
    pair: _common_pb2.Pair
    beobachter: _common_pb2.Beobachter
    inhalt: str
    dimension: str
    gewicht_roh: float
    gewicht_absolut: float
    gewicht_decay: float
    haeufigkeit: int
    aktiv: bool
    erstellt_am: _timestamp_pb2.Timestamp
    verstaerkt_am: _timestamp_pb2.Timestamp
    decay_am: _timestamp_pb2.Timestamp
    kzg_erstellt_am: _timestamp_pb2.Timestamp
    themen: _containers.RepeatedScalarFieldContainer[str]
    gedaechtnistyp: str
    magnets: _common_pb2.Magnets
    ei: _common_pb2.EiFields
    embedding: _containers.RepeatedScalarFieldContainer[float]
    sprecher: str
    sprache: str
    quell_turn_id: str
    antwort_auf: str
    def __init__(self, id: _Optional[int] = ..., kzg_quell_key: _Optional[str] = ..., pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., inhalt: _Optional[str] = ..., dimension: _Optional[str] = ..., gewicht_roh: _Optional[float] = ..., gewicht_absolut: _Optional[float] = ..., gewicht_decay: _Optional[float] = ..., haeufigkeit: _Optional[int] = ..., aktiv: _Optional[bool] = ..., erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., verstaerkt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., decay_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kzg_erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., themen: _Optional[_Iterable[str]] = ..., gedaechtnistyp: _Optional[str] = ..., magnets: _Optional[_Union[_common_pb2.Magnets, _Mapping]] = ..., ei: _Optional[_Union[_common_pb2.EiFields, _Mapping]] = ..., embedding: _Optional[_Iterable[float]] = ..., sprecher: _Optional[str] = ..., sprache: _Optional[str] = ..., quell_turn_id: _Optional[str] = ..., antwort_auf: _Optional[str] = ...) -> None: ...

class Edge(_message.Message):
    __slots__ = ("id", "knoten_a_id", "knoten_b_id", "gewicht_roh", "gewicht_absolut", "erstellt_am", "verbindungs_gruende", "geteilte_entitaet_ids", "geteilte_themen", "timeline_naehe_tage", "embedding_cosine_initial", "anzahl_schichten")
    ID_FIELD_NUMBER: _ClassVar[int]
    KNOTEN_A_ID_FIELD_NUMBER: _ClassVar[int]
    KNOTEN_B_ID_FIELD_NUMBER: _ClassVar[int]
    GEWICHT_ROH_FIELD_NUMBER: _ClassVar[int]
    GEWICHT_ABSOLUT_FIELD_NUMBER: _ClassVar[int]
    ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    VERBINDUNGS_GRUENDE_FIELD_NUMBER: _ClassVar[int]
    GETEILTE_ENTITAET_IDS_FIELD_NUMBER: _ClassVar[int]
    GETEILTE_THEMEN_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_NAEHE_TAGE_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_COSINE_INITIAL_FIELD_NUMBER: _ClassVar[int]
    ANZAHL_SCHICHTEN_FIELD_NUMBER: _ClassVar[int]
    id: int
    knoten_a_id: int
    knoten_b_id: int
    gewicht_roh: float
    gewicht_absolut: float
    erstellt_am: _timestamp_pb2.Timestamp
    verbindungs_gruende: _containers.RepeatedScalarFieldContainer[str]
    geteilte_entitaet_ids: _containers.RepeatedScalarFieldContainer[int]
    geteilte_themen: _containers.RepeatedScalarFieldContainer[str]
    timeline_naehe_tage: int
    embedding_cosine_initial: float
    anzahl_schichten: int
    def __init__(self, id: _Optional[int] = ..., knoten_a_id: _Optional[int] = ..., knoten_b_id: _Optional[int] = ..., gewicht_roh: _Optional[float] = ..., gewicht_absolut: _Optional[float] = ..., erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., verbindungs_gruende: _Optional[_Iterable[str]] = ..., geteilte_entitaet_ids: _Optional[_Iterable[int]] = ..., geteilte_themen: _Optional[_Iterable[str]] = ..., timeline_naehe_tage: _Optional[int] = ..., embedding_cosine_initial: _Optional[float] = ..., anzahl_schichten: _Optional[int] = ...) -> None: ...

class PromoteRequest(_message.Message):
    __slots__ = ("entry", "turn", "ausloeser_turn_id", "as_of")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    AUSLOESER_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    entry: _common_pb2.KzgEntry
    turn: _common_pb2.TurnContext
    ausloeser_turn_id: str
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, entry: _Optional[_Union[_common_pb2.KzgEntry, _Mapping]] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., ausloeser_turn_id: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PromoteResponse(_message.Message):
    __slots__ = ("outcome", "node_id", "best_cosine", "edges_created", "kzg_delete_allowed", "already_promoted", "candidates")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    BEST_COSINE_FIELD_NUMBER: _ClassVar[int]
    EDGES_CREATED_FIELD_NUMBER: _ClassVar[int]
    KZG_DELETE_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    ALREADY_PROMOTED_FIELD_NUMBER: _ClassVar[int]
    CANDIDATES_FIELD_NUMBER: _ClassVar[int]
    outcome: _common_pb2.PromotionOutcome
    node_id: int
    best_cosine: float
    edges_created: int
    kzg_delete_allowed: bool
    already_promoted: bool
    candidates: int
    def __init__(self, outcome: _Optional[_Union[_common_pb2.PromotionOutcome, str]] = ..., node_id: _Optional[int] = ..., best_cosine: _Optional[float] = ..., edges_created: _Optional[int] = ..., kzg_delete_allowed: _Optional[bool] = ..., already_promoted: _Optional[bool] = ..., candidates: _Optional[int] = ...) -> None: ...

class SpreadingReadRequest(_message.Message):
    __slots__ = ("pair", "query_vector", "query_text", "cluster", "nova_emotion", "turn", "readers", "user_name", "character_name", "as_of", "lexical_text", "question_entity_ids", "zeitfenster", "recall_k", "sprache")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    QUERY_VECTOR_FIELD_NUMBER: _ClassVar[int]
    QUERY_TEXT_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    NOVA_EMOTION_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    READERS_FIELD_NUMBER: _ClassVar[int]
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_NAME_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_TEXT_FIELD_NUMBER: _ClassVar[int]
    QUESTION_ENTITY_IDS_FIELD_NUMBER: _ClassVar[int]
    ZEITFENSTER_FIELD_NUMBER: _ClassVar[int]
    RECALL_K_FIELD_NUMBER: _ClassVar[int]
    SPRACHE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    query_vector: QueryVector
    query_text: str
    cluster: str
    nova_emotion: str
    turn: _common_pb2.TurnContext
    readers: _containers.RepeatedScalarFieldContainer[str]
    user_name: str
    character_name: str
    as_of: _timestamp_pb2.Timestamp
    lexical_text: str
    question_entity_ids: _containers.RepeatedScalarFieldContainer[int]
    zeitfenster: _containers.RepeatedCompositeFieldContainer[Zeitfenster]
    recall_k: int
    sprache: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., query_vector: _Optional[_Union[QueryVector, _Mapping]] = ..., query_text: _Optional[str] = ..., cluster: _Optional[str] = ..., nova_emotion: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., readers: _Optional[_Iterable[str]] = ..., user_name: _Optional[str] = ..., character_name: _Optional[str] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lexical_text: _Optional[str] = ..., question_entity_ids: _Optional[_Iterable[int]] = ..., zeitfenster: _Optional[_Iterable[_Union[Zeitfenster, _Mapping]]] = ..., recall_k: _Optional[int] = ..., sprache: _Optional[str] = ...) -> None: ...

class Zeitfenster(_message.Message):
    __slots__ = ("zeitpunkt", "praezision")
    ZEITPUNKT_FIELD_NUMBER: _ClassVar[int]
    PRAEZISION_FIELD_NUMBER: _ClassVar[int]
    zeitpunkt: _timestamp_pb2.Timestamp
    praezision: str
    def __init__(self, zeitpunkt: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., praezision: _Optional[str] = ...) -> None: ...

class TermGewicht(_message.Message):
    __slots__ = ("term", "idf")
    TERM_FIELD_NUMBER: _ClassVar[int]
    IDF_FIELD_NUMBER: _ClassVar[int]
    term: str
    idf: float
    def __init__(self, term: _Optional[str] = ..., idf: _Optional[float] = ...) -> None: ...

class RecallKandidat(_message.Message):
    __slots__ = ("knoten_id", "inhalt", "beobachter", "sprecher", "zeitpunkt", "turn_id", "kzg_quell_key", "cosine", "lexical_score", "lexical_strength", "quellen", "schale", "pfad", "score", "antwort_auf")
    KNOTEN_ID_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    SPRECHER_FIELD_NUMBER: _ClassVar[int]
    ZEITPUNKT_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_QUELL_KEY_FIELD_NUMBER: _ClassVar[int]
    COSINE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_SCORE_FIELD_NUMBER: _ClassVar[int]
    LEXICAL_STRENGTH_FIELD_NUMBER: _ClassVar[int]
    QUELLEN_FIELD_NUMBER: _ClassVar[int]
    SCHALE_FIELD_NUMBER: _ClassVar[int]
    PFAD_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ANTWORT_AUF_FIELD_NUMBER: _ClassVar[int]
    knoten_id: int
    inhalt: str
    beobachter: _common_pb2.Beobachter
    sprecher: str
    zeitpunkt: _timestamp_pb2.Timestamp
    turn_id: str
    kzg_quell_key: str
    cosine: float
    lexical_score: float
    lexical_strength: float
    quellen: _containers.RepeatedScalarFieldContainer[str]
    schale: int
    pfad: _containers.RepeatedCompositeFieldContainer[PfadSchritt]
    score: float
    antwort_auf: str
    def __init__(self, knoten_id: _Optional[int] = ..., inhalt: _Optional[str] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., sprecher: _Optional[str] = ..., zeitpunkt: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_id: _Optional[str] = ..., kzg_quell_key: _Optional[str] = ..., cosine: _Optional[float] = ..., lexical_score: _Optional[float] = ..., lexical_strength: _Optional[float] = ..., quellen: _Optional[_Iterable[str]] = ..., schale: _Optional[int] = ..., pfad: _Optional[_Iterable[_Union[PfadSchritt, _Mapping]]] = ..., score: _Optional[float] = ..., antwort_auf: _Optional[str] = ...) -> None: ...

class QueryVector(_message.Message):
    __slots__ = ("values", "model_id")
    VALUES_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    model_id: str
    def __init__(self, values: _Optional[_Iterable[float]] = ..., model_id: _Optional[str] = ...) -> None: ...

class PfadSchritt(_message.Message):
    __slots__ = ("von_knoten_id", "kante_id", "verbindungs_gruende", "geteilte_entitaet_ids", "geteilte_themen")
    VON_KNOTEN_ID_FIELD_NUMBER: _ClassVar[int]
    KANTE_ID_FIELD_NUMBER: _ClassVar[int]
    VERBINDUNGS_GRUENDE_FIELD_NUMBER: _ClassVar[int]
    GETEILTE_ENTITAET_IDS_FIELD_NUMBER: _ClassVar[int]
    GETEILTE_THEMEN_FIELD_NUMBER: _ClassVar[int]
    von_knoten_id: int
    kante_id: int
    verbindungs_gruende: _containers.RepeatedScalarFieldContainer[str]
    geteilte_entitaet_ids: _containers.RepeatedScalarFieldContainer[int]
    geteilte_themen: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, von_knoten_id: _Optional[int] = ..., kante_id: _Optional[int] = ..., verbindungs_gruende: _Optional[_Iterable[str]] = ..., geteilte_entitaet_ids: _Optional[_Iterable[int]] = ..., geteilte_themen: _Optional[_Iterable[str]] = ...) -> None: ...

class Erinnerung(_message.Message):
    __slots__ = ("rang", "knoten_id", "inhalt", "themen", "entitaet_ids", "emotion", "erstellt_am", "gewicht_decay", "schale", "sortier_gewicht", "beobachter", "pfad")
    RANG_FIELD_NUMBER: _ClassVar[int]
    KNOTEN_ID_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    THEMEN_FIELD_NUMBER: _ClassVar[int]
    ENTITAET_IDS_FIELD_NUMBER: _ClassVar[int]
    EMOTION_FIELD_NUMBER: _ClassVar[int]
    ERSTELLT_AM_FIELD_NUMBER: _ClassVar[int]
    GEWICHT_DECAY_FIELD_NUMBER: _ClassVar[int]
    SCHALE_FIELD_NUMBER: _ClassVar[int]
    SORTIER_GEWICHT_FIELD_NUMBER: _ClassVar[int]
    BEOBACHTER_FIELD_NUMBER: _ClassVar[int]
    PFAD_FIELD_NUMBER: _ClassVar[int]
    rang: int
    knoten_id: int
    inhalt: str
    themen: _containers.RepeatedScalarFieldContainer[str]
    entitaet_ids: _containers.RepeatedScalarFieldContainer[int]
    emotion: str
    erstellt_am: _timestamp_pb2.Timestamp
    gewicht_decay: float
    schale: int
    sortier_gewicht: float
    beobachter: _common_pb2.Beobachter
    pfad: _containers.RepeatedCompositeFieldContainer[PfadSchritt]
    def __init__(self, rang: _Optional[int] = ..., knoten_id: _Optional[int] = ..., inhalt: _Optional[str] = ..., themen: _Optional[_Iterable[str]] = ..., entitaet_ids: _Optional[_Iterable[int]] = ..., emotion: _Optional[str] = ..., erstellt_am: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., gewicht_decay: _Optional[float] = ..., schale: _Optional[int] = ..., sortier_gewicht: _Optional[float] = ..., beobachter: _Optional[_Union[_common_pb2.Beobachter, str]] = ..., pfad: _Optional[_Iterable[_Union[PfadSchritt, _Mapping]]] = ...) -> None: ...

class LzgResonanz(_message.Message):
    __slots__ = ("anker_anzahl", "sprung_tiefe", "cluster", "nova_sektor", "erinnerungen")
    ANKER_ANZAHL_FIELD_NUMBER: _ClassVar[int]
    SPRUNG_TIEFE_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    NOVA_SEKTOR_FIELD_NUMBER: _ClassVar[int]
    ERINNERUNGEN_FIELD_NUMBER: _ClassVar[int]
    anker_anzahl: int
    sprung_tiefe: int
    cluster: str
    nova_sektor: str
    erinnerungen: _containers.RepeatedCompositeFieldContainer[Erinnerung]
    def __init__(self, anker_anzahl: _Optional[int] = ..., sprung_tiefe: _Optional[int] = ..., cluster: _Optional[str] = ..., nova_sektor: _Optional[str] = ..., erinnerungen: _Optional[_Iterable[_Union[Erinnerung, _Mapping]]] = ...) -> None: ...

class SpreadingReadResponse(_message.Message):
    __slots__ = ("lzg_resonanz", "pool_size", "memory_blocks", "recall", "query_terms", "mittlere_laenge")
    class MemoryBlocksEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LZG_RESONANZ_FIELD_NUMBER: _ClassVar[int]
    POOL_SIZE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    RECALL_FIELD_NUMBER: _ClassVar[int]
    QUERY_TERMS_FIELD_NUMBER: _ClassVar[int]
    MITTLERE_LAENGE_FIELD_NUMBER: _ClassVar[int]
    lzg_resonanz: LzgResonanz
    pool_size: int
    memory_blocks: _containers.ScalarMap[str, str]
    recall: _containers.RepeatedCompositeFieldContainer[RecallKandidat]
    query_terms: _containers.RepeatedCompositeFieldContainer[TermGewicht]
    mittlere_laenge: float
    def __init__(self, lzg_resonanz: _Optional[_Union[LzgResonanz, _Mapping]] = ..., pool_size: _Optional[int] = ..., memory_blocks: _Optional[_Mapping[str, str]] = ..., recall: _Optional[_Iterable[_Union[RecallKandidat, _Mapping]]] = ..., query_terms: _Optional[_Iterable[_Union[TermGewicht, _Mapping]]] = ..., mittlere_laenge: _Optional[float] = ...) -> None: ...

class RenderMemoryBlockRequest(_message.Message):
    __slots__ = ("pair", "lzg_resonanz", "reader", "user_name", "character_name")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    LZG_RESONANZ_FIELD_NUMBER: _ClassVar[int]
    READER_FIELD_NUMBER: _ClassVar[int]
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    CHARACTER_NAME_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    lzg_resonanz: LzgResonanz
    reader: str
    user_name: str
    character_name: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., lzg_resonanz: _Optional[_Union[LzgResonanz, _Mapping]] = ..., reader: _Optional[str] = ..., user_name: _Optional[str] = ..., character_name: _Optional[str] = ...) -> None: ...

class RenderMemoryBlockResponse(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class NodeNaehe(_message.Message):
    __slots__ = ("knoten_id", "naehe")
    KNOTEN_ID_FIELD_NUMBER: _ClassVar[int]
    NAEHE_FIELD_NUMBER: _ClassVar[int]
    knoten_id: int
    naehe: float
    def __init__(self, knoten_id: _Optional[int] = ..., naehe: _Optional[float] = ...) -> None: ...

class VerwendungsProtokoll(_message.Message):
    __slots__ = ("geprueft", "verwendet", "naehen_alle", "knappster_verworfener", "schwelle", "deckel", "ausgang", "kanten_neu", "kanten_fehler", "kanten_dauer_ms", "error", "kanten_fehler_knoten", "wiederholt")
    GEPRUEFT_FIELD_NUMBER: _ClassVar[int]
    VERWENDET_FIELD_NUMBER: _ClassVar[int]
    NAEHEN_ALLE_FIELD_NUMBER: _ClassVar[int]
    KNAPPSTER_VERWORFENER_FIELD_NUMBER: _ClassVar[int]
    SCHWELLE_FIELD_NUMBER: _ClassVar[int]
    DECKEL_FIELD_NUMBER: _ClassVar[int]
    AUSGANG_FIELD_NUMBER: _ClassVar[int]
    KANTEN_NEU_FIELD_NUMBER: _ClassVar[int]
    KANTEN_FEHLER_FIELD_NUMBER: _ClassVar[int]
    KANTEN_DAUER_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    KANTEN_FEHLER_KNOTEN_FIELD_NUMBER: _ClassVar[int]
    WIEDERHOLT_FIELD_NUMBER: _ClassVar[int]
    geprueft: int
    verwendet: _containers.RepeatedScalarFieldContainer[int]
    naehen_alle: _containers.RepeatedCompositeFieldContainer[NodeNaehe]
    knappster_verworfener: NodeNaehe
    schwelle: float
    deckel: int
    ausgang: VerwendungAusgang
    kanten_neu: int
    kanten_fehler: int
    kanten_dauer_ms: float
    error: str
    kanten_fehler_knoten: _containers.RepeatedScalarFieldContainer[int]
    wiederholt: bool
    def __init__(self, geprueft: _Optional[int] = ..., verwendet: _Optional[_Iterable[int]] = ..., naehen_alle: _Optional[_Iterable[_Union[NodeNaehe, _Mapping]]] = ..., knappster_verworfener: _Optional[_Union[NodeNaehe, _Mapping]] = ..., schwelle: _Optional[float] = ..., deckel: _Optional[int] = ..., ausgang: _Optional[_Union[VerwendungAusgang, str]] = ..., kanten_neu: _Optional[int] = ..., kanten_fehler: _Optional[int] = ..., kanten_dauer_ms: _Optional[float] = ..., error: _Optional[str] = ..., kanten_fehler_knoten: _Optional[_Iterable[int]] = ..., wiederholt: _Optional[bool] = ...) -> None: ...

class ReinforceUsedRequest(_message.Message):
    __slots__ = ("pair", "answer_text", "served_node_ids", "turn", "as_of", "answer_vector")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    ANSWER_TEXT_FIELD_NUMBER: _ClassVar[int]
    SERVED_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    ANSWER_VECTOR_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    answer_text: str
    served_node_ids: _containers.RepeatedScalarFieldContainer[int]
    turn: _common_pb2.TurnContext
    as_of: _timestamp_pb2.Timestamp
    answer_vector: QueryVector
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., answer_text: _Optional[str] = ..., served_node_ids: _Optional[_Iterable[int]] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., answer_vector: _Optional[_Union[QueryVector, _Mapping]] = ...) -> None: ...

class ReinforceUsedResponse(_message.Message):
    __slots__ = ("protokoll",)
    PROTOKOLL_FIELD_NUMBER: _ClassVar[int]
    protokoll: VerwendungsProtokoll
    def __init__(self, protokoll: _Optional[_Union[VerwendungsProtokoll, _Mapping]] = ...) -> None: ...

class RunDecayRequest(_message.Message):
    __slots__ = ("as_of", "turn", "pairs")
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    as_of: _timestamp_pb2.Timestamp
    turn: _common_pb2.TurnContext
    pairs: _containers.RepeatedCompositeFieldContainer[_common_pb2.Pair]
    def __init__(self, as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., pairs: _Optional[_Iterable[_Union[_common_pb2.Pair, _Mapping]]] = ...) -> None: ...

class RunDecayResponse(_message.Message):
    __slots__ = ("nodes_decayed", "nodes_deactivated", "duration_ms")
    NODES_DECAYED_FIELD_NUMBER: _ClassVar[int]
    NODES_DEACTIVATED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    nodes_decayed: int
    nodes_deactivated: int
    duration_ms: float
    def __init__(self, nodes_decayed: _Optional[int] = ..., nodes_deactivated: _Optional[int] = ..., duration_ms: _Optional[float] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ("pair", "node_id", "include_embedding")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EMBEDDING_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_id: int
    include_embedding: bool
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_id: _Optional[int] = ..., include_embedding: _Optional[bool] = ...) -> None: ...

class GetNodeResponse(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: Node
    def __init__(self, node: _Optional[_Union[Node, _Mapping]] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = ("pair", "limit", "include_inactive")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_INACTIVE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    limit: int
    include_inactive: bool
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., limit: _Optional[int] = ..., include_inactive: _Optional[bool] = ...) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ...) -> None: ...

class ListEdgesRequest(_message.Message):
    __slots__ = ("pair", "node_id", "limit")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_id: int
    limit: int
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_id: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ListEdgesResponse(_message.Message):
    __slots__ = ("edges",)
    EDGES_FIELD_NUMBER: _ClassVar[int]
    edges: _containers.RepeatedCompositeFieldContainer[Edge]
    def __init__(self, edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ...) -> None: ...

class GetPairStatsRequest(_message.Message):
    __slots__ = ("pair",)
    PAIR_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ...) -> None: ...

class GetPairStatsResponse(_message.Message):
    __slots__ = ("nodes_active", "nodes_inactive", "edges", "entities", "timelines", "model_id")
    NODES_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    NODES_INACTIVE_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    nodes_active: int
    nodes_inactive: int
    edges: int
    entities: int
    timelines: int
    model_id: str
    def __init__(self, nodes_active: _Optional[int] = ..., nodes_inactive: _Optional[int] = ..., edges: _Optional[int] = ..., entities: _Optional[int] = ..., timelines: _Optional[int] = ..., model_id: _Optional[str] = ...) -> None: ...

class Entity(_message.Message):
    __slots__ = ("id", "pair", "name", "typ", "aliases")
    ID_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYP_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    id: int
    pair: _common_pb2.Pair
    name: str
    typ: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[int] = ..., pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., name: _Optional[str] = ..., typ: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ...) -> None: ...

class UpsertEntityRequest(_message.Message):
    __slots__ = ("pair", "entity")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    entity: Entity
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., entity: _Optional[_Union[Entity, _Mapping]] = ...) -> None: ...

class UpsertEntityResponse(_message.Message):
    __slots__ = ("entity", "created")
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    entity: Entity
    created: bool
    def __init__(self, entity: _Optional[_Union[Entity, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class ResolveEntitiesRequest(_message.Message):
    __slots__ = ("pair", "names", "create_missing", "typ_for_new")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    CREATE_MISSING_FIELD_NUMBER: _ClassVar[int]
    TYP_FOR_NEW_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    names: _containers.RepeatedScalarFieldContainer[str]
    create_missing: bool
    typ_for_new: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., names: _Optional[_Iterable[str]] = ..., create_missing: _Optional[bool] = ..., typ_for_new: _Optional[str] = ...) -> None: ...

class ResolveEntitiesResponse(_message.Message):
    __slots__ = ("entitaet_ids",)
    ENTITAET_IDS_FIELD_NUMBER: _ClassVar[int]
    entitaet_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, entitaet_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ListEntitiesRequest(_message.Message):
    __slots__ = ("pair", "ids")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., ids: _Optional[_Iterable[int]] = ...) -> None: ...

class ListEntitiesResponse(_message.Message):
    __slots__ = ("entities",)
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    def __init__(self, entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ...) -> None: ...

class MergeEntitiesRequest(_message.Message):
    __slots__ = ("pair", "source_id", "target_id", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    SOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    source_id: int
    target_id: int
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., source_id: _Optional[int] = ..., target_id: _Optional[int] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class DeleteEntityRequest(_message.Message):
    __slots__ = ("pair", "entity_id", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    ENTITY_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    entity_id: int
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., entity_id: _Optional[int] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class Trigger3Response(_message.Message):
    __slots__ = ("nodes_rewritten", "edges_recomputed", "edges_deleted")
    NODES_REWRITTEN_FIELD_NUMBER: _ClassVar[int]
    EDGES_RECOMPUTED_FIELD_NUMBER: _ClassVar[int]
    EDGES_DELETED_FIELD_NUMBER: _ClassVar[int]
    nodes_rewritten: int
    edges_recomputed: int
    edges_deleted: int
    def __init__(self, nodes_rewritten: _Optional[int] = ..., edges_recomputed: _Optional[int] = ..., edges_deleted: _Optional[int] = ...) -> None: ...

class Timeline(_message.Message):
    __slots__ = ("id", "pair", "zeitpunkt", "praezision", "titel", "themen")
    ID_FIELD_NUMBER: _ClassVar[int]
    PAIR_FIELD_NUMBER: _ClassVar[int]
    ZEITPUNKT_FIELD_NUMBER: _ClassVar[int]
    PRAEZISION_FIELD_NUMBER: _ClassVar[int]
    TITEL_FIELD_NUMBER: _ClassVar[int]
    THEMEN_FIELD_NUMBER: _ClassVar[int]
    id: int
    pair: _common_pb2.Pair
    zeitpunkt: _timestamp_pb2.Timestamp
    praezision: str
    titel: str
    themen: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[int] = ..., pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., zeitpunkt: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., praezision: _Optional[str] = ..., titel: _Optional[str] = ..., themen: _Optional[_Iterable[str]] = ...) -> None: ...

class UpsertTimelineRequest(_message.Message):
    __slots__ = ("pair", "timeline")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    timeline: Timeline
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., timeline: _Optional[_Union[Timeline, _Mapping]] = ...) -> None: ...

class UpsertTimelineResponse(_message.Message):
    __slots__ = ("timeline", "created")
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    timeline: Timeline
    created: bool
    def __init__(self, timeline: _Optional[_Union[Timeline, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class UpdateTimelineRequest(_message.Message):
    __slots__ = ("pair", "timeline", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    timeline: Timeline
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., timeline: _Optional[_Union[Timeline, _Mapping]] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class DeleteTimelineRequest(_message.Message):
    __slots__ = ("pair", "timeline_id", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    timeline_id: int
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., timeline_id: _Optional[int] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class ListTimelinesRequest(_message.Message):
    __slots__ = ("pair", "ids", "zeitpunkt", "praezision")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    ZEITPUNKT_FIELD_NUMBER: _ClassVar[int]
    PRAEZISION_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    ids: _containers.RepeatedScalarFieldContainer[int]
    zeitpunkt: _timestamp_pb2.Timestamp
    praezision: str
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., ids: _Optional[_Iterable[int]] = ..., zeitpunkt: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., praezision: _Optional[str] = ...) -> None: ...

class ListTimelinesResponse(_message.Message):
    __slots__ = ("timelines",)
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    timelines: _containers.RepeatedCompositeFieldContainer[Timeline]
    def __init__(self, timelines: _Optional[_Iterable[_Union[Timeline, _Mapping]]] = ...) -> None: ...

class EraseRequest(_message.Message):
    __slots__ = ("target",)
    TARGET_FIELD_NUMBER: _ClassVar[int]
    target: _common_pb2.ErasureTarget
    def __init__(self, target: _Optional[_Union[_common_pb2.ErasureTarget, _Mapping]] = ...) -> None: ...

class EraseResponse(_message.Message):
    __slots__ = ("nodes", "edges", "entities", "timelines", "verbindungen", "characters")
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    VERBINDUNGEN_FIELD_NUMBER: _ClassVar[int]
    CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    nodes: int
    edges: int
    entities: int
    timelines: int
    verbindungen: int
    characters: int
    def __init__(self, nodes: _Optional[int] = ..., edges: _Optional[int] = ..., entities: _Optional[int] = ..., timelines: _Optional[int] = ..., verbindungen: _Optional[int] = ..., characters: _Optional[int] = ...) -> None: ...

class ExportPairRequest(_message.Message):
    __slots__ = ("pair",)
    PAIR_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ...) -> None: ...

class ExportCounts(_message.Message):
    __slots__ = ("entities", "timelines", "nodes", "edges")
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    entities: int
    timelines: int
    nodes: int
    edges: int
    def __init__(self, entities: _Optional[int] = ..., timelines: _Optional[int] = ..., nodes: _Optional[int] = ..., edges: _Optional[int] = ...) -> None: ...

class ExportPairChunk(_message.Message):
    __slots__ = ("counts", "model_id", "entities", "timelines", "nodes", "edges")
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_ID_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    counts: ExportCounts
    model_id: str
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    timelines: _containers.RepeatedCompositeFieldContainer[Timeline]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    edges: _containers.RepeatedCompositeFieldContainer[Edge]
    def __init__(self, counts: _Optional[_Union[ExportCounts, _Mapping]] = ..., model_id: _Optional[str] = ..., entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., timelines: _Optional[_Iterable[_Union[Timeline, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ...) -> None: ...

class ImportPairChunk(_message.Message):
    __slots__ = ("pair", "entities", "timelines", "nodes", "edges")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    TIMELINES_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    entities: _containers.RepeatedCompositeFieldContainer[Entity]
    timelines: _containers.RepeatedCompositeFieldContainer[Timeline]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    edges: _containers.RepeatedCompositeFieldContainer[Edge]
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., entities: _Optional[_Iterable[_Union[Entity, _Mapping]]] = ..., timelines: _Optional[_Iterable[_Union[Timeline, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[Edge, _Mapping]]] = ...) -> None: ...

class IdMapping(_message.Message):
    __slots__ = ("old_id", "new_id")
    OLD_ID_FIELD_NUMBER: _ClassVar[int]
    NEW_ID_FIELD_NUMBER: _ClassVar[int]
    old_id: int
    new_id: int
    def __init__(self, old_id: _Optional[int] = ..., new_id: _Optional[int] = ...) -> None: ...

class ImportPairResponse(_message.Message):
    __slots__ = ("entity_ids", "timeline_ids", "node_ids", "edges")
    ENTITY_IDS_FIELD_NUMBER: _ClassVar[int]
    TIMELINE_IDS_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    entity_ids: _containers.RepeatedCompositeFieldContainer[IdMapping]
    timeline_ids: _containers.RepeatedCompositeFieldContainer[IdMapping]
    node_ids: _containers.RepeatedCompositeFieldContainer[IdMapping]
    edges: int
    def __init__(self, entity_ids: _Optional[_Iterable[_Union[IdMapping, _Mapping]]] = ..., timeline_ids: _Optional[_Iterable[_Union[IdMapping, _Mapping]]] = ..., node_ids: _Optional[_Iterable[_Union[IdMapping, _Mapping]]] = ..., edges: _Optional[int] = ...) -> None: ...

class ForgetNodesRequest(_message.Message):
    __slots__ = ("pair", "node_ids", "source_turn_id", "turn")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_TURN_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_ids: _containers.RepeatedScalarFieldContainer[int]
    source_turn_id: str
    turn: _common_pb2.TurnContext
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_ids: _Optional[_Iterable[int]] = ..., source_turn_id: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class ForgottenNode(_message.Message):
    __slots__ = ("node_id", "kzg_quell_key", "kzg_keys", "turn_ids")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_QUELL_KEY_FIELD_NUMBER: _ClassVar[int]
    KZG_KEYS_FIELD_NUMBER: _ClassVar[int]
    TURN_IDS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    kzg_quell_key: str
    kzg_keys: _containers.RepeatedScalarFieldContainer[str]
    turn_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node_id: _Optional[int] = ..., kzg_quell_key: _Optional[str] = ..., kzg_keys: _Optional[_Iterable[str]] = ..., turn_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ForgetNodesResponse(_message.Message):
    __slots__ = ("nodes", "edges")
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[ForgottenNode]
    edges: int
    def __init__(self, nodes: _Optional[_Iterable[_Union[ForgottenNode, _Mapping]]] = ..., edges: _Optional[int] = ...) -> None: ...

class CorrectNodeRequest(_message.Message):
    __slots__ = ("pair", "node_id", "kzg_quell_key", "inhalt", "turn", "as_of")
    PAIR_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    KZG_QUELL_KEY_FIELD_NUMBER: _ClassVar[int]
    INHALT_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    pair: _common_pb2.Pair
    node_id: int
    kzg_quell_key: str
    inhalt: str
    turn: _common_pb2.TurnContext
    as_of: _timestamp_pb2.Timestamp
    def __init__(self, pair: _Optional[_Union[_common_pb2.Pair, _Mapping]] = ..., node_id: _Optional[int] = ..., kzg_quell_key: _Optional[str] = ..., inhalt: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CorrectNodeResponse(_message.Message):
    __slots__ = ("node", "previous_inhalt", "edges_removed", "edges_created")
    NODE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_INHALT_FIELD_NUMBER: _ClassVar[int]
    EDGES_REMOVED_FIELD_NUMBER: _ClassVar[int]
    EDGES_CREATED_FIELD_NUMBER: _ClassVar[int]
    node: Node
    previous_inhalt: str
    edges_removed: int
    edges_created: int
    def __init__(self, node: _Optional[_Union[Node, _Mapping]] = ..., previous_inhalt: _Optional[str] = ..., edges_removed: _Optional[int] = ..., edges_created: _Optional[int] = ...) -> None: ...
