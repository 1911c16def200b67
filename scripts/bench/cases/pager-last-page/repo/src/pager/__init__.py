from .paginate import Paginator, page_count

__all__ = ["Paginator", "page_count"]
