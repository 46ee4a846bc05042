"""Answers with citations: generators behind one interface, and answer_question."""

from documents.generation.base import NO_REFERENCES, Answer, Citation, Generator
from documents.generation.chat import GenerationError
from documents.generation.service import answer_question, get_generator

__all__ = [
    "NO_REFERENCES",
    "Answer",
    "Citation",
    "GenerationError",
    "Generator",
    "answer_question",
    "get_generator",
]
