// An Angular component trusting a query parameter as HTML.
import { Component } from "@angular/core";
import { ActivatedRoute } from "@angular/router";
import { DomSanitizer, SafeHtml } from "@angular/platform-browser";

@Component({ selector: "app-search", template: "<div [innerHTML]=\"heading\"></div>" })
export class SearchComponent {
  heading: SafeHtml = "";

  constructor(private route: ActivatedRoute, private sanitizer: DomSanitizer) {}

  ngOnInit(): void {
    const q: string = this.route.snapshot.queryParams.q;
    this.heading = this.sanitizer.bypassSecurityTrustHtml("Results for " + q); // taint: xss
  }
}
