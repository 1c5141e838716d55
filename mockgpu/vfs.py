"""A virtual file system: the files, sysfs trees and character devices a mock driver publishes, and the fds opened on them.

Drivers mount `Node`s at absolute paths. A `Dir` lists its children; a `File` serves text (fixed or computed on each read); a
`RandomAccessFile` serves binary data at the file position;
a `CharDevice` hands out an `OpenDevice` per open, which implements `ioctl` and `mmap` like a kernel driver's file ops.
Fds are fake integers from a private range: they are handed to tinygrad (which embeds them in ioctl structs) and must never
reach the host kernel.
"""
from __future__ import annotations
import errno, itertools, os, threading
from typing import Callable

class Node:
  """Anything that can live at a path."""

class File(Node):
  """A readable (and optionally writable) text file; `content` may be a callable evaluated on each read."""
  def __init__(self, content:str|bytes|Callable[[], str|bytes]="", on_write:Callable[[bytes], None]|None=None):
    self.content, self.on_write = content, on_write
  def data(self) -> bytes:
    """The current bytes of the file."""
    c = self.content() if callable(self.content) else self.content
    return c.encode() if isinstance(c, str) else c

class RandomAccessFile(Node):
  """A binary file read and written at the file position (PCI config space, /proc/self/pagemap): `read_at(pos, size)` returns
  bytes, `write_at(pos, data)` (optional) stores them."""
  def __init__(self, read_at:Callable[[int, int], bytes], write_at:Callable[[int, bytes], None]|None=None, size:int=0):
    self.read_at, self.write_at, self.size = read_at, write_at, size

class Dir(Node):
  """A directory; children are created on demand by `VFS.mkdirs` / `VFS.mount`."""
  def __init__(self): self.children: dict[str, Node] = {}

class Link(Node):
  """A symbolic link (only `readlink` and path resolution of the final component's target name are supported)."""
  def __init__(self, target:str): self.target = target

class OpenDevice:
  """One open file description of a character device. Drivers subclass this; unknown requests fail like an unsupported ioctl."""
  def ioctl(self, request:int, arg) -> int: raise OSError(errno.ENOTTY, os.strerror(errno.ENOTTY))
  def mmap(self, start:int, size:int, prot:int, flags:int, offset:int) -> int: raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
  def close(self): pass

class CharDevice(Node):
  """A device node; `opener(path, flags)` returns the `OpenDevice` for each open."""
  def __init__(self, opener:Callable[[str, int], OpenDevice]): self.opener = opener

class OpenFile:
  """What an fd refers to: a node plus a file position (and the device state for device nodes)."""
  def __init__(self, path:str, node:Node, flags:int, dev:OpenDevice|None):
    self.path, self.node, self.flags, self.dev, self.pos = path, node, flags, dev, 0

def _split(path:str) -> list[str]:
  if not path.startswith("/"): raise FileNotFoundError(errno.ENOENT, "mockgpu paths are absolute", path)
  return [p for p in os.path.normpath(path).split("/") if p]

class VFS:
  """The mounted tree and the fd table. Thread-safe for open/close; nodes themselves guard their own state."""
  FD_BASE = 0x40000000  # far above any real fd, so a fake fd never aliases a host one

  def __init__(self):
    self.root = Dir()
    self.fds: dict[int, OpenFile] = {}
    self._next_fd = itertools.count(self.FD_BASE)
    self._lock = threading.Lock()

  def lookup(self, path:str) -> Node | None:
    """The node at `path`, or None."""
    node: Node = self.root
    for part in _split(path):
      if not isinstance(node, Dir) or (node:=node.children.get(part)) is None: return None  # type: ignore[assignment]
    return node

  def mkdirs(self, path:str) -> Dir:
    """Create (or find) the directory at `path` and every parent."""
    node = self.root
    for part in _split(path):
      nxt = node.children.setdefault(part, Dir())
      if not isinstance(nxt, Dir): raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
      node = nxt
    return node

  def mount(self, path:str, node:Node) -> Node:
    """Place `node` at `path`, creating parent directories."""
    parent, name = path.rsplit("/", 1)
    self.mkdirs(parent or "/").children[name] = node
    return node

  def owns(self, path:str) -> bool:
    """Whether `path` is inside a mounted tree (then it is answered here, never by the host file system)."""
    return self.lookup(path) is not None

  def open(self, path:str, flags:int) -> int:
    """Open `path`; returns a fake fd. Missing paths raise FileNotFoundError, like open(2)."""
    if (node:=self.lookup(path)) is None: raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    dev = node.opener(path, flags) if isinstance(node, CharDevice) else None
    with self._lock:
      fd = next(self._next_fd)
      self.fds[fd] = OpenFile(path, node, flags, dev)
    return fd

  def file(self, fd:int) -> OpenFile:
    """The open file behind `fd` (EBADF when there is none)."""
    if (f:=self.fds.get(fd)) is None: raise OSError(errno.EBADF, os.strerror(errno.EBADF))
    return f

  def close(self, fd:int):
    """Release `fd`; a device's close hook runs when its last fd goes."""
    with self._lock: f = self.fds.pop(fd, None)
    if f is not None and f.dev is not None: f.dev.close()

  def read(self, fd:int, size:int|None=None) -> bytes:
    """Read from the current position."""
    f = self.file(fd)
    if isinstance(f.node, Dir): raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), f.path)
    if isinstance(f.node, RandomAccessFile):
      data = f.node.read_at(f.pos, max(0, f.node.size - f.pos) if size is None else size)
      f.pos += len(data)
      return data
    if not isinstance(f.node, File): raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), f.path)
    data = f.node.data()[f.pos:] if size is None else f.node.data()[f.pos:f.pos+size]
    f.pos += len(data)
    return data

  def write(self, fd:int, data:bytes):
    """Write to a file that accepts writes (sysfs-style: the whole write is one store)."""
    f = self.file(fd)
    if isinstance(f.node, RandomAccessFile) and f.node.write_at is not None:
      f.node.write_at(f.pos, data)
      f.pos += len(data)
      return
    if not isinstance(f.node, File) or f.node.on_write is None: raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), f.path)
    f.node.on_write(data)

  def listdir(self, path:str) -> list[str]:
    """Names in the directory at `path`."""
    if (node:=self.lookup(path)) is None: raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if not isinstance(node, Dir): raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
    return list(node.children)

  def readlink(self, path:str) -> str:
    """Target of the link at `path` (EINVAL when it is no link, like readlink(2))."""
    if (node:=self.lookup(path)) is None: raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
    if not isinstance(node, Link): raise OSError(errno.EINVAL, os.strerror(errno.EINVAL), path)
    return node.target
