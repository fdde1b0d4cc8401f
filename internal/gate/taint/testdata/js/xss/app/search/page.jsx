// A Next.js page printing a query parameter as HTML.
export default function SearchPage({ searchParams }) {
  const message = searchParams.message;
  return (
    <main>
      <p>{message}</p>
      <div dangerouslySetInnerHTML={{ __html: message }} /> {/* taint: xss */}
    </main>
  );
}
