// The shared object native_library_test loads.
extern "C" int add(int a, int b) { return a + b; }
