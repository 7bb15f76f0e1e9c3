// The standard library's exception and stream types (NVRTC only): complete, so that a host
// class may derive from one or hold one (a logger deriving from std::ostream and holding a
// std::stringbuf, an exception class deriving from std::exception), as nvcc's host headers
// give them. Never used: the lab blanks the host functions that would.
#pragma once
#include "kernel_lab_host_type.h"
namespace std {
struct exception : kernel_lab::host_type {
    using host_type::host_type;
};
#define KERNEL_LAB_EXCEPTION(NAME, BASE)                                                          \
    struct NAME : BASE {                                                                          \
        using BASE::BASE;                                                                         \
    };
KERNEL_LAB_EXCEPTION(bad_alloc, exception)
KERNEL_LAB_EXCEPTION(logic_error, exception)
KERNEL_LAB_EXCEPTION(runtime_error, exception)
KERNEL_LAB_EXCEPTION(invalid_argument, logic_error)
KERNEL_LAB_EXCEPTION(out_of_range, logic_error)
KERNEL_LAB_EXCEPTION(length_error, logic_error)
KERNEL_LAB_EXCEPTION(domain_error, logic_error)
KERNEL_LAB_EXCEPTION(overflow_error, runtime_error)
KERNEL_LAB_EXCEPTION(underflow_error, runtime_error)
KERNEL_LAB_EXCEPTION(range_error, runtime_error)
#undef KERNEL_LAB_EXCEPTION

struct ios_base : kernel_lab::host_type {
    using host_type::host_type;
};
template <class Char, class Traits = void> struct basic_ios : ios_base {
    using ios_base::ios_base;
};
template <class Char, class Traits = void> struct basic_streambuf : kernel_lab::host_type {
    using host_type::host_type;
};
template <class Char, class Traits = void, class Allocator = void>
struct basic_stringbuf : basic_streambuf<Char, Traits> {
    using basic_streambuf<Char, Traits>::basic_streambuf;
};
template <class Char, class Traits = void> struct basic_filebuf : basic_streambuf<Char, Traits> {
    using basic_streambuf<Char, Traits>::basic_streambuf;
};
template <class Char, class Traits = void> struct basic_ostream : basic_ios<Char, Traits> {
    using basic_ios<Char, Traits>::basic_ios;
};
template <class Char, class Traits = void> struct basic_istream : basic_ios<Char, Traits> {
    using basic_ios<Char, Traits>::basic_ios;
};
template <class Char, class Traits = void> struct basic_iostream : basic_ios<Char, Traits> {
    using basic_ios<Char, Traits>::basic_ios;
};
using streambuf = basic_streambuf<char>;
using stringbuf = basic_stringbuf<char>;
using filebuf = basic_filebuf<char>;
using ostream = basic_ostream<char>;
using istream = basic_istream<char>;
using iostream = basic_iostream<char>;
using ostringstream = basic_ostream<char>;
using istringstream = basic_istream<char>;
using stringstream = basic_iostream<char>;
using ofstream = basic_ostream<char>;
using ifstream = basic_istream<char>;
using fstream = basic_iostream<char>;
extern ostream cout, cerr, clog;
extern istream cin;
template <class Char, class Traits> basic_ostream<Char, Traits> &endl(basic_ostream<Char, Traits> &);
template <class Char, class Traits> basic_ostream<Char, Traits> &flush(basic_ostream<Char, Traits> &);
}  // namespace std
