-- gen-problems: LuaLaTeX's Lua confined to the run's work folder.
--
-- Loaded with `lualatex --lua=<this file>` before the format and before any document
-- code, so everything a document's \directlua can call is the confined version below.
-- LuaTeX's own --safer cannot be used: luaotfload refuses to run with it, and --safer
-- still lets io.lines, io.input and loadfile read any file.  Here:
--   * files are written (io, os, lfs, gzip, MetaPost, TeX's \openout through a callback)
--     only inside the work folder (the current folder when TeX starts) and the font
--     cache folder named by TEXMFCACHE (gen-problems' own, never the system's);
--   * files are read (the same, plus loadfile, dofile, require, images, PDFs, fonts, and
--     files TeX embeds in the PDF) only there and in TeX's trees and the font folders;
--   * no program is run (os.execute, io.popen, ...), no C library loaded, no
--     environment variable set (kpathsea reads openin_any and openout_any from it);
--   * no Lua bytecode is loaded from a folder a document can write to (crafted bytecode
--     breaks out of any Lua sandbox), and the debug library keeps only traceback and
--     getinfo (the rest would hand out the unconfined functions kept below).
-- A refused file is reported as a file that cannot be opened, so a document that asks
-- for one fails (or goes on without it) the way it would for a missing file.
-- Paths are checked after every symbolic link in them is followed.

local type, select, error, tostring, pcall = type, select, error, tostring, pcall
local ipairs, pairs = ipairs, pairs
local sub, find, gmatch = string.sub, string.find, string.gmatch
local byte, char = string.byte, string.char
local concat, remove, pack, unpack = table.concat, table.remove, table.pack, table.unpack
local setmetatable, getmetatable = setmetatable, getmetatable
local digest256 = sha2.digest256
local io_open, io_lines, io_input, io_output = io.open, io.lines, io.input, io.output
local os_remove, os_rename, os_tmpdir, os_getenv = os.remove, os.rename, os.tmpdir, os.getenv
local lfs_attributes, lfs_symlinkattributes = lfs.attributes, lfs.symlinkattributes
local lfs_currentdir, lfs_chdir, lfs_dir = lfs.currentdir, lfs.chdir, lfs.dir
local lfs_mkdir, lfs_rmdir, lfs_touch, lfs_lock_dir = lfs.mkdir, lfs.rmdir, lfs.touch, lfs.lock_dir
local lua_load, lua_loadfile, lua_dofile = load, loadfile, dofile
local kpse_expand_braces, kpse_find_file = kpse.expand_braces, kpse.find_file
local callback_register = callback.register

local REFUSED = "gen-problems: TeX may not use this file"
local MAX_LINKS = 40

-- -- paths ---------------------------------------------------------------------------------

local function pushed(stack, path)
  local parts = {}
  for part in gmatch(path, "[^/]+") do parts[#parts + 1] = part end
  for index = #parts, 1, -1 do stack[#stack + 1] = parts[index] end
  return stack
end

-- The absolute path with "." and ".." resolved and every symbolic link followed
-- (a part that does not exist is taken as written); nil for a link loop.
local function resolved(path)
  if sub(path, 1, 1) ~= "/" then path = lfs_currentdir() .. "/" .. path end
  local stack, parts, links = pushed({}, path), {}, 0
  while #stack > 0 do
    local part = remove(stack)
    if part == ".." then
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
      local here = "/" .. concat(parts, "/")
      if lfs_symlinkattributes(here, "mode") == "link" then
        links = links + 1
        local target = lfs_symlinkattributes(here, "target")
        if links > MAX_LINKS or not target then return nil end
        parts[#parts] = nil
        if sub(target, 1, 1) == "/" then parts = {} end
        pushed(stack, target)
      end
    end
  end
  return "/" .. concat(parts, "/")
end

local function within(path, roots)
  for index = 1, #roots do
    local root = roots[index]
    if path == root or sub(path, 1, #root + 1) == root .. "/" then return true end
  end
  return false
end

-- Folders as roots: resolved, never "/" itself.
local function add_root(roots, folder)
  if type(folder) == "string" and folder ~= "" then
    local path = resolved(folder)
    if path and path ~= "/" then roots[#roots + 1] = path end
  end
  return roots
end

local home = os_getenv("HOME")
local writable = add_root(add_root({}, lfs_currentdir()), os_getenv("TEXMFCACHE"))
local font_folders = {"/usr/share/fonts", "/usr/local/share/fonts", "/etc/fonts"}
if home then
  font_folders[#font_folders + 1] = home .. "/.fonts"
  local data = os_getenv("XDG_DATA_HOME") or home .. "/.local/share"
  font_folders[#font_folders + 1] = data .. "/fonts"
end

-- TeX's trees are known once kpathsea is set up, after this file has run.
local readable, ancestors
local function read_roots()
  if readable then return readable, ancestors end
  readable = {}
  for index = 1, #writable do readable[index] = writable[index] end
  for index = 1, #font_folders do add_root(readable, font_folders[index]) end
  for _, variable in ipairs({"TEXMF", "TEXMFROOT", "TEXMFDIST", "OSFONTDIR"}) do
    for tree in gmatch(kpse_expand_braces("$" .. variable) or "", "[^:;]+") do
      local plain = sub(tree, 1, 2) == "!!" and sub(tree, 3) or tree
      if sub(plain, 1, 1) == "/" then add_root(readable, plain) end
    end
  end
  ancestors = {}
  for index = 1, #readable do
    local path = readable[index]
    while true do
      path = sub(path, 1, (find(path, "/[^/]*$") or 1) - 1)
      if path == "" then break end
      ancestors[path] = true
    end
  end
  ancestors["/"] = true
  return readable, ancestors
end

local function path_of(name)
  if type(name) == "number" then return tostring(name) end
  return type(name) == "string" and name or nil
end

local function may_write(name)
  local path = path_of(name)
  local real = path and resolved(path)
  return real ~= nil and within(real, writable)
end

local function may_read(name)
  local path = path_of(name)
  local real = path and resolved(path)
  return real ~= nil and within(real, (read_roots()))
end

-- Whether a file's attributes may be looked at: a readable file, or a folder on the way to one.
local function may_look(name)
  local path = path_of(name)
  local real = path and resolved(path)
  if real == nil then return false end
  local roots, on_the_way = read_roots()
  return within(real, roots) or on_the_way[real] == true
end

local function in_writable(name)
  local real = resolved(name)
  return real ~= nil and within(real, writable)
end

local function refused(name)
  return nil, tostring(name) .. ": " .. REFUSED, 13  -- as io.open fails: nil, message, EACCES
end

local function disabled(what)
  return function()
    return nil, what .. ": disabled by gen-problems (no programs, no C libraries)"
  end
end

-- -- signed bytecode -------------------------------------------------------------------------

-- luaotfload keeps fonts' tables in its cache as bytecode, and a document may write there
-- too: bytecode crafted by a document breaks out of any Lua sandbox.  So bytecode is loaded
-- from a writable folder only when signed: a file written whole, in one write, with what
-- string.dump made in this run (so compiled from Lua source, never crafted) is signed with
-- HMAC-SHA256 under a key only this file's code reads (GEN_PROBLEMS_TEX_KEY names the key's
-- file, which is outside every folder a document may read).  Without a key nothing is signed
-- and cached bytecode is compiled again from its source, which costs time only.
local SIGNATURE = ".gen-problems-signature"
local dumped = {}  -- what string.dump made in this run
local key
do
  local key_file = os_getenv("GEN_PROBLEMS_TEX_KEY")
  local file = key_file and io_open(key_file, "rb")
  if file then
    key = file:read("a")
    file:close()
  end
  if key and (#key < 16 or #key > 64) then key = nil end
end

local function padded(value)
  local bytes = {}
  for index = 1, 64 do bytes[index] = char((byte(key, index) or 0) ~ value) end
  return concat(bytes)
end
local inner_pad, outer_pad = key and padded(0x36), key and padded(0x5c)

local function signature(data)
  return digest256(outer_pad .. digest256(inner_pad .. data))
end

-- The bytes of a file that carries its signature, read once (what is checked is what loads).
local function signed_bytes(path)
  if not key then return nil end
  local file = io_open(path, "rb")
  if not file then return nil end
  local data = file:read("a")
  file:close()
  local mark = io_open(path .. SIGNATURE, "rb")
  if not mark then return nil end
  local signed = mark:read("a")
  mark:close()
  return signed == signature(data) and data or nil
end

local handle = getmetatable(io.stderr)  -- a file handle's methods (its __index)
local handle_write, handle_close = handle.write, handle.close
local signing = setmetatable({}, {__mode = "k"})  -- handle -> its file, while it may be signed

handle.write = function(file, ...)
  local state = signing[file]
  if state then
    state.bytes = state.writes == 0 and select("#", ...) == 1 and dumped[(...)] and (...) or nil
    state.writes = state.writes + select("#", ...)
  end
  return handle_write(file, ...)
end

handle.close = function(file, ...)
  local state = signing[file]
  signing[file] = nil
  local results = pack(handle_close(file, ...))
  if state and state.bytes and results[1] then
    local mark = io_open(state.path .. SIGNATURE, "wb")
    if mark then
      handle_write(mark, signature(state.bytes))
      handle_close(mark)
    end
  end
  return unpack(results, 1, results.n)
end

-- -- io and os -------------------------------------------------------------------------------

local function reading(mode)
  return mode == nil or mode == "r" or mode == "rb"
end

io.open = function(name, mode, ...)
  local allowed = reading(mode) and may_read(name) or (not reading(mode) and may_write(name))
  if not allowed and path_of(name) then return refused(name) end
  local file, message, code = io_open(name, mode, ...)
  if file and key and (mode == "w" or mode == "wb") then
    signing[file] = {path = resolved(path_of(name)), writes = 0}
  end
  return file, message, code
end

io.lines = function(name, ...)
  if path_of(name) and not may_read(name) then error(tostring(name) .. ": " .. REFUSED, 2) end
  return io_lines(name, ...)
end

io.input = function(file)
  if path_of(file) and not may_read(file) then error(tostring(file) .. ": " .. REFUSED, 2) end
  return io_input(file)
end

io.output = function(file)
  if path_of(file) and not may_write(file) then error(tostring(file) .. ": " .. REFUSED, 2) end
  return io_output(file)
end

io.popen, io.tmpfile = disabled("io.popen"), disabled("io.tmpfile")
os.execute = function(command)
  if command == nil then return false end  -- "is there a shell?": no
  return nil, "os.execute: disabled by gen-problems"
end
os.exec, os.spawn = disabled("os.exec"), disabled("os.spawn")
os.kpsepopen = disabled("os.kpsepopen")
os.setenv = disabled("os.setenv")

os.remove = function(name)
  if not may_write(name) then return refused(name) end
  return os_remove(name)
end

os.rename = function(old, new)
  if not (may_write(old) and may_write(new)) then return refused(may_write(old) and new or old) end
  return os_rename(old, new)
end

os.tmpdir = function(template)
  if not may_write(template or "luatex.XXXXXX") then return refused(template) end
  return os_tmpdir(template)
end

-- A temporary file in the work folder, not in /tmp (luaotfload keeps colour glyphs in them).
local temporary = 0
os.tmpname = function()
  local name
  repeat
    temporary = temporary + 1
    name = writable[1] .. "/lua-temporary-" .. temporary
  until not lfs_attributes(name, "mode")
  local file = io_open(name, "wb")
  if file then file:close() end
  return name
end

-- -- lfs ---------------------------------------------------------------------------------------

local function writes(action)
  return function(name, ...)
    if not may_write(name) then return refused(name) end
    return action(name, ...)
  end
end

local function looks(action)
  return function(name, ...)
    if path_of(name) and not may_look(name) then return refused(name) end
    return action(name, ...)
  end
end

lfs.mkdir, lfs.rmdir = writes(lfs_mkdir), writes(lfs_rmdir)
lfs.touch, lfs.lock_dir = writes(lfs_touch), writes(lfs_lock_dir)
lfs.link = disabled("lfs.link")
lfs.attributes, lfs.symlinkattributes = looks(lfs_attributes), looks(lfs_symlinkattributes)
-- (LuaTeX adds lfs.isdir, isfile and readlink after this file has run, from these.)

lfs.dir = function(name, ...)
  if path_of(name) and not may_read(name) then
    error("cannot open " .. tostring(name) .. ": " .. REFUSED, 2)
  end
  return lfs_dir(name, ...)
end

-- TeX writes its own files (\openout, the PDF) relative to the current folder, so the
-- folder really changed to is never outside the writable ones.  luaotfload changes into
-- each font folder only to see that it can, and to read its real name back: a readable
-- folder is changed to in name only (lfs.currentdir says so), until the next change.
local named_folder
lfs.chdir = function(name)
  local real = path_of(name) and resolved(path_of(name))
  if real and within(real, writable) then
    local done, message = lfs_chdir(real)
    if done then named_folder = nil end
    return done, message
  end
  if real and within(real, (read_roots())) and lfs_attributes(real, "mode") == "directory" then
    named_folder = real
    return true
  end
  return refused(name)
end

lfs.currentdir = function()
  return named_folder or lfs_currentdir()
end

-- -- Lua code --------------------------------------------------------------------------------

-- From a folder a document can write to: text, or signed bytecode.
loadfile = function(name, mode, ...)
  if name == nil then return lua_loadfile(name, mode, ...) end
  if not may_read(name) then return refused(name) end
  if in_writable(path_of(name)) then
    local bytes = signed_bytes(resolved(path_of(name)))
    if bytes then return lua_load(bytes, "@" .. path_of(name), mode, ...) end
    mode = "t"
  end
  return lua_loadfile(name, mode, ...)
end

dofile = function(name)
  if name == nil then return lua_dofile() end
  local chunk, message = loadfile(name)
  if not chunk then error(message, 2) end
  return chunk()
end

-- Bytecode as a string only if string.dump made it here (lualibs strips its compiled
-- formatters so): a document could read crafted bytes from a file it wrote.
local string_dump = string.dump
string.dump = function(...)
  local bytes = string_dump(...)
  dumped[bytes] = true
  return bytes
end

load = function(chunk, name, mode, ...)
  if not (type(chunk) == "string" and dumped[chunk]) then mode = "t" end
  return lua_load(chunk, name, mode, ...)
end
loadstring = load

package.loadlib = disabled("package.loadlib")
package.cpath = ""
for index = #package.searchers, 3, -1 do package.searchers[index] = nil end  -- C libraries
local kpse_searcher = package.searchers[2]
package.searchers[2] = function(name)
  local looked, file = pcall(kpse_find_file, name, "lua")
  if not looked then return kpse_searcher(name) end  -- kpathsea is not set up yet
  if not file then return "\n\tno file '" .. tostring(name) .. "' in TeX's trees" end
  local chunk, message = loadfile(file)
  if not chunk then
    error("error loading module '" .. name .. "' from file '" .. file .. "':\n\t" .. tostring(message), 2)
  end
  return chunk, file
end

local getinfo = debug.getinfo
debug = {
  traceback = debug.traceback,
  getinfo = function(...)
    local info = getinfo(...)
    if type(info) == "table" then info.func = nil end
    return info
  end,
}
package.loaded.debug = debug
-- (ffi: LuaTeX empties it itself when shell escape is off, after this file has run.)

-- -- libraries that open files by name ------------------------------------------------------

local function reads(action, argument)
  return function(...)
    local name = select(argument, ...)
    if path_of(name) and not may_read(name) then return refused(name) end
    return action(...)
  end
end

if fontloader then
  fontloader.open, fontloader.info = reads(fontloader.open, 1), reads(fontloader.info, 1)
  fontloader.apply_afmfile = reads(fontloader.apply_afmfile, 2)
  fontloader.apply_featurefile = reads(fontloader.apply_featurefile, 2)
end
if pdfe then pdfe.open = reads(pdfe.open, 1) end
if zip then zip.open, zip.openfile = reads(zip.open, 1), reads(zip.openfile, 1) end

if gzip then
  local gzip_open, gzip_lines = gzip.open, gzip.lines
  gzip.open = function(name, mode, ...)
    local reads_it = mode == nil or find(mode, "^r") ~= nil
    local allowed = reads_it and may_read(name) or (not reads_it and may_write(name))
    if not allowed and path_of(name) then return refused(name) end
    return gzip_open(name, mode, ...)
  end
  if gzip_lines then gzip.lines = reads(gzip_lines, 1) end
end

local harfbuzz = package.loaded.luaharfbuzz
if harfbuzz then
  harfbuzz.Blob.new_from_file = reads(harfbuzz.Blob.new_from_file, 1)
  harfbuzz.Face.new = reads(harfbuzz.Face.new, 1)
end

-- An image names its file in a table, or in an image object whose fields can be set later.
local function image_file_allowed(image)
  local kind = type(image)
  if kind ~= "table" and kind ~= "userdata" then return true end
  local ok, name, path = pcall(function() return image.filename, image.filepath end)
  if not ok then return true end  -- not an image: LuaTeX itself says so
  return (name == nil or may_read(name)) and (path == nil or may_read(path))
end

if img then
  for _, action in ipairs({"new", "scan", "write", "immediatewrite", "immediatewriteobject", "node",
                           "copy"}) do
    local original = img[action]
    if original then
      img[action] = function(image, ...)
        if not image_file_allowed(image) then error("image: " .. REFUSED, 2) end
        return original(image, ...)
      end
    end
  end
end

-- An object read from a file: pdf.obj and pdf.immediateobj ("file" or "streamfile", or a
-- table's file field) read it themselves, with no callback.
local function object_file(...)
  local first = ...
  if type(first) == "table" then return first.file end
  local start = type(first) == "number" and 2 or 1
  local kind = select(start, ...)
  if kind == "file" or kind == "streamfile" then return select(start + 1, ...) end
  return nil
end

local function found_by_tex(name)
  local looked, found = pcall(kpse_find_file, name, "tex", true)
  return looked and found or name
end

for _, action in ipairs({"obj", "immediateobj"}) do
  local original = pdf and pdf[action]
  if original then
    pdf[action] = function(...)
      local name = object_file(...)
      if path_of(name) and not may_read(found_by_tex(name)) then
        error("pdf." .. action .. ": " .. tostring(name) .. ": " .. REFUSED, 2)
      end
      return original(...)
    end
  end
end

-- MetaPost finds every file it reads or writes through find_file.
if mplib then
  local mplib_new = mplib.new
  mplib.new = function(options, ...)
    local settings, find_file = {}, nil
    if type(options) == "table" then
      for key, value in pairs(options) do settings[key] = value end
      find_file = options.find_file
    end
    settings.find_file = function(name, mode, kind)
      local found = name
      if find_file then found = find_file(name, mode, kind) end
      if type(found) ~= "string" then return found end
      if mode == "w" then return may_write(found) and found or nil end
      return may_read(found) and found or nil
    end
    return mplib_new(settings, ...)
  end
end

-- -- TeX's file callbacks ----------------------------------------------------------------------

-- A callback that finds a file decides which file TeX opens, and TeX then checks neither
-- openin_any nor openout_any: whatever a callback finds is checked here.  The files TeX
-- copies into the PDF (\pdfextension obj file, images, fonts and their maps and encodings)
-- are found through these callbacks even when no package sets one: kpathsea lets them
-- name any file.
local WRITES = {find_write_file = true, find_output_file = true}
local EMBEDDED = {
  find_image_file = "tex", find_map_file = "map",
  find_enc_file = "enc files", find_type1_file = "type1 fonts",
  find_truetype_file = "truetype fonts", find_opentype_file = "opentype fonts",
  find_cidmap_file = "cid maps",
}

local function kpathsea_finder(format)
  return function(name)
    local found = kpse_find_file(name, format, format == "tex")
    if found == nil and format == "opentype fonts" then
      found = kpse_find_file(name, "truetype fonts")
    end
    if found and may_read(found) then return found end
    return nil
  end
end

local function checked_finder(callback, finder)
  if callback == "find_data_file" then  -- a name for read_data_file to check (see there)
    return function(name, ...)
      local found = finder(name, ...)
      return type(found) == "string" and found or name
    end
  end
  if WRITES[callback] then
    return function(...)
      local found = finder(...)
      local asked = select(select("#", ...), ...)  -- TeX opens the name it asked for
      local asked_allowed = type(asked) ~= "string" or may_write(asked)
      if type(found) == "string" and not (may_write(found) and asked_allowed) then return nil end
      return found
    end
  end
  return function(...)
    local found = finder(...)
    if type(found) == "string" and not may_read(found) then return nil end
    return found
  end
end

-- TeX embeds \pdfextension obj file {...} from the file find_data_file names, through
-- read_data_file; when find_data_file names none, TeX opens the file itself, unchecked.
local function read_data_file(name)
  if not may_read(name) then return false end
  local file = io_open(name, "rb")
  if not file then return false end
  local data = file:read("a")
  file:close()
  return true, data, #data
end

local DEFAULTS = {find_data_file = found_by_tex, read_data_file = read_data_file}
for name, format in pairs(EMBEDDED) do DEFAULTS[name] = kpathsea_finder(format) end

callback.register = function(name, action, ...)
  if type(name) == "string" and find(name, "^find_.*_file$") and type(action) == "function" then
    action = checked_finder(name, action)
  elseif DEFAULTS[name] and type(action) ~= "function" then  -- given up: the checked default
    action = DEFAULTS[name]
  end
  return callback_register(name, action, ...)
end

for name, action in pairs(DEFAULTS) do callback_register(name, action) end
